//! The `helm` flags and errors scripts rely on that Helm's own golden files
//! (`helm_golden.rs`) do not cover, each as Helm v4.2.4's `pkg/cmd` handles it:
//! `template`'s `--hide-secret`, `--skip-tests`, `--no-hooks`, `--name-template`,
//! `-g`, `--api-versions` lists, `--dry-run` spellings, `--validate`, `--debug`,
//! the namespace Helm's settings find, install-only flags; the release commands'
//! argument errors, `get all --template`, `list --time-format`, `-a` and
//! `template --dry-run=server` against a cluster.

mod cli;

use std::process::{Command, Output};

use testkit::{ChartDir, Cluster};

/// A chart with a ConfigMap showing what the render saw, a Secret, a hook and
/// a test hook; `fail: true` makes a template fail.
fn chart() -> ChartDir {
    ChartDir::new(
        "flags",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: flags\nversion: 0.1.0\n"),
            ("values.yaml", "fail: false\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  \
                 namespace: {{ .Release.Namespace }}\n  \
                 a: {{ .Capabilities.APIVersions.Has \"a.example/v1\" | quote }}\n  \
                 b: {{ .Capabilities.APIVersions.Has \"b.example/v1\" | quote }}\n  \
                 {{- if .Values.fail }}\n  bad: {{ b64enc .Values.missing }}\n  {{- end }}\n",
            ),
            (
                "templates/secret.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-s\ndata:\n  key: c2VjcmV0\n",
            ),
            (
                "templates/hook.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations:\n    helm.sh/hook: pre-install\n",
            ),
            (
                "templates/tests/t.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
            ),
        ],
    )
}

/// `rudder ARGS` with no cluster, no `HELM_*` settings and `envs` set.
fn rudder_with(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("HELM_NAMESPACE")
        .env_remove("HELM_KUBECONTEXT")
        .env_remove("HELM_DRIVER");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("rudder runs")
}

fn rudder(args: &[&str]) -> Output {
    rudder_with(args, &[])
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Stdout of a run that must succeed.
fn ok(args: &[&str]) -> String {
    let o = rudder(args);
    assert!(o.status.success(), "rudder {args:?}: {}", err(&o));
    out(&o)
}

/// Stderr of a run that must fail with exit status 1.
fn fails(args: &[&str]) -> String {
    let o = rudder(args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "rudder {args:?}: {}{}",
        out(&o),
        err(&o)
    );
    err(&o)
}

fn path(c: &ChartDir) -> &str {
    c.path().to_str().expect("utf-8 path")
}

#[test]
fn template_hides_secrets_and_leaves_out_hooks_as_asked() {
    let c = chart();
    let all = ok(&["template", path(&c)]);
    assert!(
        all.contains("# Source: flags/templates/tests/t.yaml\n"),
        "{all}"
    );
    assert!(
        all.contains("# Source: flags/templates/hook.yaml\n"),
        "{all}"
    );
    assert!(
        all.ends_with("helm.sh/hook: test\n\n"),
        "a blank line ends it: {all}"
    );

    let no_tests = ok(&["template", path(&c), "--skip-tests"]);
    assert!(!no_tests.contains("tests/t.yaml"), "{no_tests}");
    assert!(no_tests.contains("templates/hook.yaml"), "{no_tests}");
    let no_hooks = ok(&["template", path(&c), "--no-hooks"]);
    assert!(
        !no_hooks.contains("hook.yaml") && !no_hooks.contains("tests/t.yaml"),
        "{no_hooks}"
    );
    assert!(
        no_hooks.ends_with("b: \"false\"\n"),
        "manifests trimmed: {no_hooks:?}"
    );

    let hidden = ok(&["template", path(&c), "--hide-secret"]);
    assert!(
        hidden.contains(
            "# Source: flags/templates/secret.yaml\n# HIDDEN: The Secret output has been suppressed\n"
        ),
        "{hidden}"
    );
    assert!(!hidden.contains("c2VjcmV0"), "{hidden}");
}

#[test]
fn template_names_the_release_as_helm_does() {
    let c = chart();
    let named = ok(&[
        "template",
        path(&c),
        "--name-template",
        "{{ \"ABC\" | lower }}-x",
    ]);
    assert!(named.contains("name: abc-x-cm\n"), "{named}");
    assert!(ok(&["template", path(&c), "-g"]).contains("name: release-name-cm\n"));
    assert!(ok(&["template", "mine", path(&c)]).contains("name: mine-cm\n"));
    assert_eq!(
        fails(&["template", "mine", path(&c), "-g"]),
        "Error: cannot set --generate-name and also specify a name\n"
    );
    assert_eq!(
        fails(&["template", "mine", path(&c), "--name-template", "x"]),
        "Error: cannot set --name-template and also specify a name\n"
    );
    assert_eq!(
        fails(&["template", "a", path(&c), "c", "d"]),
        "Error: expected at most two arguments, unexpected arguments: c, d\n"
    );
    let bad = fails(&["template", "Bad_Name", path(&c)]);
    assert!(
        bad.contains("release name \"Bad_Name\": invalid release name"),
        "{bad}"
    );
    let bad_tpl = fails(&["template", path(&c), "--name-template", "{{ nope }}"]);
    assert!(
        bad_tpl.contains("function \"nope\" not defined"),
        "{bad_tpl}"
    );
}

#[test]
fn template_capabilities_and_namespace_come_from_flags_env_and_kubeconfig() {
    let c = chart();
    for args in [
        &["--api-versions", "a.example/v1,b.example/v1"][..],
        &["-a", "a.example/v1", "-a", "b.example/v1"],
    ] {
        let mut all = vec!["template", path(&c)];
        all.extend_from_slice(args);
        let text = ok(&all);
        assert!(
            text.contains("a: \"true\"\n  b: \"true\"\n"),
            "{args:?}: {text}"
        );
    }
    assert!(ok(&["template", path(&c)]).contains("namespace: default\n"));

    // Helm's settings: -n, else HELM_NAMESPACE, else the kubeconfig context's.
    let dir = tempfile::tempdir().expect("temp dir");
    let kc = dir.path().join("config");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         contexts: [{name: c, context: {cluster: k, namespace: team}}, {name: d, context: {cluster: k, namespace: other}}]\nusers: []\n",
    )
    .expect("kubeconfig");
    let kc = kc.to_str().expect("utf-8");
    let ns = |args: &[&str], envs: &[(&str, &str)]| {
        let mut all = vec!["template", path(&c)];
        all.extend_from_slice(args);
        let o = rudder_with(&all, envs);
        assert!(o.status.success(), "{}", err(&o));
        let text = out(&o);
        let line = text
            .lines()
            .find(|l| l.contains("namespace: "))
            .unwrap_or_default();
        line.trim().trim_start_matches("namespace: ").to_string()
    };
    assert_eq!(ns(&[], &[("KUBECONFIG", kc)]), "team");
    assert_eq!(ns(&["--kube-context", "d"], &[("KUBECONFIG", kc)]), "other");
    assert_eq!(ns(&["--kubeconfig", kc], &[]), "team");
    assert_eq!(
        ns(&[], &[("KUBECONFIG", kc), ("HELM_NAMESPACE", "env")]),
        "env"
    );
    assert_eq!(
        ns(
            &["-n", "flag"],
            &[("KUBECONFIG", kc), ("HELM_NAMESPACE", "env")]
        ),
        "flag"
    );
}

#[test]
fn template_dry_run_spellings_and_install_only_flags() {
    let c = chart();
    let plain = ok(&["template", path(&c)]);
    for flags in [
        &["--dry-run=client"][..],
        &["--dry-run=true"],
        &[
            "--wait",
            "--wait-for-jobs",
            "--timeout",
            "5m",
            "--atomic",
            "--create-namespace",
        ],
        &[
            "--description",
            "x",
            "--labels",
            "a=b",
            "--force",
            "--take-ownership",
            "--skip-crds",
        ],
        &["--debug", "--server-side", "--replace"],
        &[
            "--server-side=false",
            "--hide-notes",
            "--render-subchart-notes",
            "--devel",
        ],
    ] {
        let mut all = vec!["template", path(&c)];
        all.extend_from_slice(flags);
        assert_eq!(ok(&all), plain, "{flags:?}");
    }
    let bare = rudder(&["template", path(&c), "--dry-run"]);
    assert_eq!(out(&bare), plain);
    assert!(
        err(&bare)
            .contains("--dry-run is deprecated and should be replaced with '--dry-run=client'"),
        "{}",
        err(&bare)
    );
    assert_eq!(
        fails(&["template", path(&c), "--dry-run=none"]),
        "Error: invalid dry-run value (\"none\"). Must be \"server\" or \"client\"\n"
    );
    assert_eq!(
        fails(&["template", path(&c), "--dry-run=false"]),
        "Error: invalid dry-run value (\"false\"). Must be \"server\" or \"client\"\n"
    );
    assert_eq!(
        fails(&["template", path(&c), "--dry-run=later"]),
        "Error: invalid dry-run value (\"later\"). Must be \"none\", \"server\", or \"client\"\n"
    );
    assert_eq!(
        fails(&["template", path(&c), "--validate", "--dry-run=client"]),
        "Error: if any flags in the group [validate dry-run] are set none of the others can be; [dry-run validate] were all set\n"
    );
}

#[test]
fn template_failures_read_as_helms() {
    let c = chart();
    let e = fails(&["template", path(&c), "--set", "fail=true"]);
    assert!(
        e.starts_with("Error: flags/templates/cm.yaml:")
            && e.ends_with("\n\nUse --debug flag to render out invalid YAML\n"),
        "{e}"
    );
    // With --debug Helm prints what it rendered (nothing, here) before the error.
    let o = rudder(&["template", path(&c), "--set", "fail=true", "--debug"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(out(&o), "\n");
    assert!(!err(&o).contains("Use --debug"), "{}", err(&o));
    assert_eq!(
        fails(&["template", path(&c), "-s", "templates/nope.yaml"]),
        "Error: could not find template templates/nope.yaml in chart\n"
    );
    assert_eq!(
        fails(&["template", "./no/such/chart"]),
        "Error: path \"./no/such/chart\" not found\n"
    );
}

#[test]
fn release_commands_refuse_wrong_arguments_with_helms_usage() {
    for (args, want) in [
        (&["history"][..], "\"helm history\" requires 1 argument\n\nUsage:  helm history RELEASE_NAME [flags]"),
        (&["status", "a", "b"], "\"helm status\" requires 1 argument\n\nUsage:  helm status RELEASE_NAME [flags]"),
        (&["get", "all"], "\"helm get all\" requires 1 argument\n\nUsage:  helm get all RELEASE_NAME [flags]"),
        (&["get", "values"], "\"helm get values\" requires 1 argument\n\nUsage:  helm get values RELEASE_NAME [flags]"),
        (&["get", "metadata"], "\"helm get metadata\" requires 1 argument\n\nUsage:  helm get metadata RELEASE_NAME [flags]"),
        (&["list", "x"], "\"helm list\" accepts no arguments\n\nUsage:  helm list [flags]"),
        (&["install"], "\"helm install\" requires at least 1 argument\n\nUsage:  helm install [NAME] [CHART] [flags]"),
        (&["upgrade", "a"], "\"helm upgrade\" requires 2 arguments\n\nUsage:  helm upgrade [RELEASE] [CHART] [flags]"),
        (&["rollback"], "\"helm rollback\" requires at least 1 argument\n\nUsage:  helm rollback <RELEASE> [REVISION] [flags]"),
        (&["uninstall"], "\"helm uninstall\" requires at least 1 argument\n\nUsage:  helm uninstall RELEASE_NAME [...] [flags]"),
        (&["rollback", "web", "x"], "could not convert revision to a number: strconv.Atoi: parsing \"x\": invalid syntax"),
    ] {
        assert_eq!(fails(args), format!("Error: {want}\n"), "{args:?}");
    }
}

fn cluster_ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what}: {}{}", out(o), err(o));
    out(o)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_reads_and_server_renders_against_a_cluster() {
    let ns = Cluster::start().namespace("helm-flags");
    let kc = ns.kubeconfig().to_path_buf();
    let c = chart();
    let run = |args: Vec<String>| {
        let kc = kc.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli::rudder(&kc, &args).await
        }
    };
    let s = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    cluster_ok(
        &run(s(&["install", "web", path(&c), "--no-hooks"])).await,
        "install",
    );

    let t = cluster_ok(
        &run(s(&[
            "get",
            "all",
            "web",
            "--template",
            "{{.Release.Name}} {{.Release.Version}} {{.Release.Chart.Metadata.Name}} {{.Release.Info.Status}}",
        ]))
        .await,
        "get all --template",
    );
    assert_eq!(t, "web 1 flags deployed");

    let year = jiff::Zoned::now().year().to_string();
    let listed = cluster_ok(
        &run(s(&["list", "--time-format", "2006", "--no-headers"])).await,
        "list --time-format",
    );
    assert_eq!(
        listed.split('\t').map(str::trim).nth(3),
        Some(year.as_str()),
        "{listed}"
    );
    let plain = cluster_ok(&run(s(&["list"])).await, "list");
    let with_a = run(s(&["list", "-a"])).await;
    assert_eq!(cluster_ok(&with_a, "list -a"), plain);
    assert!(
        err(&with_a).contains("Flag --all has been deprecated"),
        "{}",
        err(&with_a)
    );

    // --dry-run=server renders against the cluster: `lookup` sees the release's
    // ConfigMap. (Helm's check for objects another release owns does not apply:
    // `template` reuses the name.)
    let looked = ChartDir::new(
        "looks",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: looks\nversion: 0.1.0\n"),
            (
                "templates/seen.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\ndata:\n  found: {{ dig \"metadata\" \"name\" \"none\" (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"web-cm\") | quote }}\n",
            ),
        ],
    );
    let offline = cluster_ok(&run(s(&["template", path(&looked)])).await, "template");
    assert!(offline.contains("found: \"none\""), "{offline}");
    for flag in ["--dry-run=server", "--validate"] {
        let server = cluster_ok(&run(s(&["template", path(&looked), flag])).await, flag);
        assert!(server.contains("found: \"web-cm\""), "{flag}: {server}");
        assert!(
            server.starts_with("---\n# Source: looks/templates/seen.yaml\n"),
            "{server}"
        );
    }
}
