//! `rudder up`: the embedded API server, the operator and an example release on a
//! machine without a cluster. The example chart, CRD, CR and watches.yaml are compiled
//! into the binary, and the operator runs them from memory, so it works from any
//! directory and writes nothing but the kubeconfig (and, when asked, the examples).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::Client;
use operator::Watch;
use serde_json::Value;

/// The port `rudder up` prefers when `--listen` is not given, so the printed commands
/// stay the same from one run to the next; any free port is used when it is taken.
const FRIENDLY_PORT: u16 = 6464;

const NAMESPACE: &str = "default";

/// The example chart, as (path under the work dir, contents).
const EXAMPLE_FILES: &[(&str, &str)] = &[
    (
        "charts/hello/Chart.yaml",
        include_str!("../../../examples/charts/hello/Chart.yaml"),
    ),
    (
        "charts/hello/values.yaml",
        include_str!("../../../examples/charts/hello/values.yaml"),
    ),
    (
        "charts/hello/values.schema.json",
        include_str!("../../../examples/charts/hello/values.schema.json"),
    ),
    (
        "charts/hello/templates/NOTES.txt",
        include_str!("../../../examples/charts/hello/templates/NOTES.txt"),
    ),
    (
        "charts/hello/templates/_helpers.tpl",
        include_str!("../../../examples/charts/hello/templates/_helpers.tpl"),
    ),
    (
        "charts/hello/templates/configmap.yaml",
        include_str!("../../../examples/charts/hello/templates/configmap.yaml"),
    ),
    (
        "charts/hello/templates/deployment.yaml",
        include_str!("../../../examples/charts/hello/templates/deployment.yaml"),
    ),
    (
        "charts/hello/templates/service.yaml",
        include_str!("../../../examples/charts/hello/templates/service.yaml"),
    ),
    (
        "operator/watches.yaml",
        include_str!("../../../examples/operator/watches.yaml"),
    ),
    (
        "operator/crd.yaml",
        include_str!("../../../examples/operator/crd.yaml"),
    ),
    (
        "operator/cr.yaml",
        include_str!("../../../examples/operator/cr.yaml"),
    ),
];

const CRD_YAML: &str = include_str!("../../../examples/operator/crd.yaml");
const CR_YAML: &str = include_str!("../../../examples/operator/cr.yaml");

/// Flags of `rudder up`.
#[derive(clap::Args)]
pub(crate) struct UpArgs {
    /// Address for the embedded API server [default: 127.0.0.1:6464, or any free port
    /// when that one is taken].
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Where to write the kubeconfig for kubectl and helm [default: ./rudder.kubeconfig,
    /// or a temporary file when the current directory is not writable].
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Keep the cluster's state in this directory across runs (memory only when absent).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Also write the example chart, CRD, CR and watches.yaml into this directory, to look
    /// at or edit [default: nothing is written; the operator runs the bundled copies].
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Install the CRD and start the operator, but do not create the example CR.
    #[arg(long)]
    no_example: bool,
    /// How long to wait for the example release to be deployed (e.g. 90s, 2m).
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    timeout: Duration,
}

/// Parses a Go duration (`90s`, `2m`, `1h`, `500ms`, `1m30s`), or a bare
/// number of seconds (`90`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let bad = |why: &dyn std::fmt::Display| {
        format!("`{text}` is not a duration ({why}); write e.g. 90s, 2m or 1h")
    };
    gostd::time::Duration::parse(text)
        .map_err(|e| bad(&e))?
        .to_std()
        .ok_or_else(|| bad(&"negative"))
}

pub(crate) fn run(args: UpArgs) -> anyhow::Result<()> {
    init_logging();
    let rt = crate::runtime::deep_stack_runtime()?;
    rt.block_on(up(args))
}

/// Operator logs go to stderr at `warn` unless RUST_LOG says otherwise, so the progress
/// lines on stdout stay readable.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    let listen = match args.listen {
        Some(addr) => addr,
        None => friendly_listen_addr(),
    };
    let kubeconfig_out = match args.kubeconfig_out.clone() {
        Some(p) => absolute(&p),
        None => default_kubeconfig_path(),
    };
    let server = apiserver::Server::start(apiserver::Config {
        listen,
        data_dir: args.data_dir.clone(),
        kubeconfig_out: Some(kubeconfig_out.clone()),
        simulate_readiness: true,
        tls: false,
        authorization: apiserver::Authorization::AlwaysAllow,
    })
    .await
    .map_err(|e| start_error(e, listen, args.data_dir.as_deref()))?;
    println!("✓ API server listening on {}", server.url());
    let client = server.client()?;

    let result = run_example(&args, &client, server.kubeconfig_path()).await;
    server.stop().await;
    result
}

/// Everything after the server is up; the caller stops the server afterwards.
async fn run_example(args: &UpArgs, client: &Client, kubeconfig: &Path) -> anyhow::Result<()> {
    let crd = install_crd(client, args.timeout).await?;
    println!("✓ CRD {crd} established");

    if let Some(dir) = &args.work_dir {
        let dir = absolute(dir);
        write_example_files(&dir)?;
        println!("✓ example files written to {}", dir.display());
    }
    let watch = example_watch();
    let chart = example_chart()?;
    let watched = format!("{} → chart {}", watch.gvk_string(), chart.metadata.name);

    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let mut operator = tokio::spawn(start_operator(
        client.clone(),
        watch,
        Arc::new(chart),
        shutdown_rx,
    ));
    println!("✓ operator started (watches {watched})");

    let signal = operator::shutdown_signal();
    tokio::pin!(signal);
    let example = async {
        if args.no_example {
            return Ok(());
        }
        let cr_name = apply_example_cr(client).await?;
        println!("✓ Hello/{cr_name} applied in namespace {NAMESPACE}");
        wait_deployed(client, &cr_name, args.timeout).await
    };
    let result = tokio::select! {
        res = example => match res {
            Ok(()) => {
                print_next_steps(kubeconfig, args.no_example);
                tokio::select! {
                    _ = &mut signal => Ok(()),
                    res = &mut operator => Err(operator_stopped(res)),
                }
            }
            Err(e) => Err(e),
        },
        _ = &mut signal => Ok(()),
        res = &mut operator => Err(operator_stopped(res)),
    };
    if result.is_ok() {
        println!("\nStopping…");
    }
    let _ = shutdown_tx.send(true);
    // The operator finishes a reconcile in flight (bounded by its shutdown timeout)
    // before the API server goes away.
    if !operator.is_finished() {
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut operator).await;
        operator.abort();
    }
    result
}

/// The example's watch, as the bundled `watches.yaml` says it.
fn example_watch() -> Watch {
    Watch {
        group: "demo.rudder.dev".into(),
        version: "v1alpha1".into(),
        kind: "Hello".into(),
        chart: PathBuf::from("charts/hello"),
        watch_dependent_resources: true,
        ..Watch::default()
    }
}

/// The example chart, loaded from the copies compiled into the binary.
fn example_chart() -> anyhow::Result<chart::loader::Chart> {
    let files = EXAMPLE_FILES
        .iter()
        .filter_map(|(path, text)| {
            let name = path.strip_prefix("charts/hello/")?;
            Some(chart::loader::BufferedFile {
                name: name.to_string(),
                data: text.as_bytes().to_vec(),
            })
        })
        .collect();
    chart::loader::load_files(files).context("the bundled example chart")
}

/// Runs the operator on the example watch until `shutdown` turns true.
async fn start_operator(
    client: Client,
    watch: Watch,
    chart: Arc<chart::loader::Chart>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    // One process, one operator: no leader election, no metrics or probe servers
    // whose fixed ports could clash with a real operator on this machine.
    let options = operator::Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        leader_elect: false,
        shutdown_timeout: Duration::from_secs(5),
        ..operator::Options::default()
    };
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    operator::Operator::new(client)
        .with_options(options)
        .watch(watch, chart)
        .run(stop)
        .await
        .map_err(|e| anyhow!(e))
}

fn operator_stopped(res: Result<anyhow::Result<()>, tokio::task::JoinError>) -> anyhow::Error {
    match res {
        Ok(Ok(())) => anyhow!("the operator stopped unexpectedly"),
        Ok(Err(e)) => e.context("the operator stopped"),
        Err(e) => anyhow!("the operator crashed: {e}"),
    }
}

/// The preferred fixed port when it is free, otherwise any free port.
fn friendly_listen_addr() -> SocketAddr {
    let friendly = SocketAddr::from((Ipv4Addr::LOCALHOST, FRIENDLY_PORT));
    // Binding and releasing is racy, but a lost race only means a clear bind error.
    match TcpListener::bind(friendly) {
        Ok(_) => friendly,
        Err(_) => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
    }
}

fn default_kubeconfig_path() -> PathBuf {
    let here = absolute(Path::new("rudder.kubeconfig"));
    let writable = here
        .parent()
        .and_then(|dir| std::fs::metadata(dir).ok())
        .is_some_and(|m| !m.permissions().readonly());
    if writable {
        here
    } else {
        std::env::temp_dir().join(format!("rudder-{}.kubeconfig", std::process::id()))
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    match std::env::current_dir() {
        Ok(cwd) => cwd.join(path),
        Err(_) => path.to_path_buf(),
    }
}

fn start_error(
    e: apiserver::ServerError,
    listen: SocketAddr,
    data_dir: Option<&Path>,
) -> anyhow::Error {
    if let apiserver::ServerError::Bind { source, .. } = &e {
        if source.kind() == std::io::ErrorKind::AddrInUse {
            return anyhow!(
                "cannot listen on {listen}: the port is already in use \
                 (is another `rudder up` running?); pass --listen 127.0.0.1:0 to pick a free port"
            );
        }
    }
    match data_dir {
        // The cause is quoted in the sentence, so it is not the chain's next link too.
        Some(dir) => anyhow!(
            "could not start the API server with --data-dir {} ({}); \
             another rudder may be using that directory",
            dir.display(),
            apierror::chain(&e)
        ),
        None => anyhow!(e).context("could not start the embedded API server"),
    }
}

/// Creates (or updates) the example CRD and waits until it is served.
async fn install_crd(client: &Client, timeout: Duration) -> anyhow::Result<String> {
    let value = gocodec::yaml::parse_yaml_to_json(CRD_YAML).context("the bundled crd.yaml")?;
    let crd: CustomResourceDefinition =
        serde_json::from_value(value).context("the bundled crd.yaml is not a CRD")?;
    let name = crd.metadata.name.clone().unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        // Kept from an earlier run with --data-dir.
        Err(kube::Error::Api(ae)) if ae.code == 409 => {}
        Err(e) => return Err(anyhow!(e).context(format!("creating CRD {name}"))),
    }
    let deadline = Instant::now() + timeout;
    loop {
        let current = api.get(&name).await?;
        let established = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(name);
        }
        if Instant::now() > deadline {
            bail!("CRD {name} was not established within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn write_example_files(work_dir: &Path) -> anyhow::Result<()> {
    for (rel, text) in EXAMPLE_FILES {
        let path = work_dir.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating work directory {}", dir.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn hello_resource() -> ApiResource {
    ApiResource {
        group: "demo.rudder.dev".into(),
        version: "v1alpha1".into(),
        api_version: "demo.rudder.dev/v1alpha1".into(),
        kind: "Hello".into(),
        plural: "hellos".into(),
    }
}

/// Creates the example CR, or leaves an existing one (from --data-dir) as it is.
async fn apply_example_cr(client: &Client) -> anyhow::Result<String> {
    let value = gocodec::yaml::parse_yaml_to_json(CR_YAML).context("the bundled cr.yaml")?;
    let cr: DynamicObject =
        serde_json::from_value(value).context("the bundled cr.yaml is not an object")?;
    let name = cr.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &hello_resource());
    match api.create(&PostParams::default(), &cr).await {
        Ok(_) => {}
        Err(kube::Error::Api(ae)) if ae.code == 409 => {}
        Err(e) => return Err(anyhow!(e).context(format!("creating Hello/{name}"))),
    }
    Ok(name)
}

/// Prints each status condition as it changes until `Deployed` is `True`.
async fn wait_deployed(client: &Client, name: &str, timeout: Duration) -> anyhow::Result<()> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &hello_resource());
    let deadline = Instant::now() + timeout;
    let mut seen: BTreeMap<String, (String, String)> = BTreeMap::new();
    loop {
        let cr = api
            .get(name)
            .await
            .with_context(|| format!("reading Hello/{name}"))?;
        let conditions = cr
            .data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut deployed = false;
        for c in &conditions {
            let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let (ty, status, reason, message) = (
                field("type"),
                field("status"),
                field("reason"),
                field("message"),
            );
            if seen.get(&ty) != Some(&(status.clone(), reason.clone())) {
                let detail = if message.is_empty() || status == "True" && ty == "Deployed" {
                    String::new()
                } else {
                    format!(": {}", first_line(&message))
                };
                let shown = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                println!("  status: {ty}={status}{shown}{detail}");
                seen.insert(ty.clone(), (status.clone(), reason.clone()));
            }
            if ty == "Deployed" && status == "True" {
                deployed = true;
            }
        }
        if deployed {
            match deployed_revision(client, name).await {
                Some(rev) => println!("✓ Deployed: revision {rev}"),
                None => println!("✓ Deployed"),
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            let last = seen
                .iter()
                .map(|(t, (s, r))| format!("{t}={s} ({r})"))
                .collect::<Vec<_>>()
                .join(", ");
            bail!(
                "Hello/{name} was not deployed within {timeout:?} (last status: {}); \
                 run with RUST_LOG=info to see the operator's log",
                if last.is_empty() { "none" } else { &last }
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The newest deployed revision of the release, from Helm's record labels.
async fn deployed_revision(client: &Client, release: &str) -> Option<u64> {
    let api: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let list = api
        .list(&ListParams::default().labels(&format!("owner=helm,name={release}")))
        .await
        .ok()?;
    list.items
        .iter()
        .filter_map(|s| {
            let labels = s.metadata.labels.as_ref()?;
            if labels.get("status").map(String::as_str) != Some("deployed") {
                return None;
            }
            labels.get("version")?.parse::<u64>().ok()
        })
        .max()
}

fn print_next_steps(kubeconfig: &Path, no_example: bool) {
    let kc = kubeconfig.display();
    println!();
    println!("Kubeconfig: {kc}");
    println!();
    println!("Try:");
    println!("  export KUBECONFIG={kc}");
    println!("  kubectl get hellos");
    if no_example {
        println!("  kubectl apply -f examples/operator/cr.yaml");
    } else {
        println!("  kubectl get deployments,services,configmaps");
        println!("  kubectl patch hello hello-sample --type merge -p '{{\"spec\":{{\"replicaCount\":3}}}}'");
        println!("  kubectl edit hello hello-sample");
        println!("  rudder list");
        println!("  rudder history hello-sample");
        println!("  kubectl delete hello hello-sample");
    }
    println!();
    println!("rudder is running; press Ctrl-C to stop.");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn bundled_examples_parse() {
        let crd: CustomResourceDefinition =
            serde_json::from_value(gocodec::yaml::parse_yaml_to_json(CRD_YAML).unwrap()).unwrap();
        assert_eq!(crd.spec.group, "demo.rudder.dev");
        assert_eq!(crd.spec.names.plural, "hellos");
        let cr: DynamicObject =
            serde_json::from_value(gocodec::yaml::parse_yaml_to_json(CR_YAML).unwrap()).unwrap();
        assert_eq!(
            cr.types.as_ref().map(|t| t.api_version.as_str()),
            Some("demo.rudder.dev/v1alpha1")
        );
        assert!(cr.data.get("spec").is_some_and(Value::is_object));
    }

    /// A file added to the example chart must be added to `EXAMPLE_FILES` too.
    #[test]
    fn every_example_chart_file_is_bundled() {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, base, out);
                } else {
                    let rel = path.strip_prefix(base).unwrap();
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut on_disk = Vec::new();
        walk(&examples.join("charts/hello"), &examples, &mut on_disk);
        on_disk.sort();
        let mut bundled: Vec<String> = EXAMPLE_FILES
            .iter()
            .map(|(p, _)| p.to_string())
            .filter(|p| p.starts_with("charts/hello/"))
            .collect();
        bundled.sort();
        assert_eq!(bundled, on_disk);
    }

    #[test]
    fn the_example_watch_is_the_bundled_watches_yaml() {
        let dir = std::env::temp_dir().join(format!("rudder-up-watch-{}", std::process::id()));
        write_example_files(&dir).unwrap();
        let parsed = operator::load_watches(&dir.join("operator/watches.yaml")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(parsed.len(), 1);
        let mut expected = example_watch();
        expected.chart = parsed[0].chart.clone();
        assert_eq!(parsed[0], expected);
        let chart = example_chart().unwrap();
        assert_eq!(chart.metadata.name, "hello");
        assert!(!chart.templates.is_empty());
    }

    #[test]
    fn example_files_are_written_in_the_repo_layout() {
        let dir = std::env::temp_dir().join(format!("rudder-up-test-{}", std::process::id()));
        write_example_files(&dir).unwrap();
        assert!(dir.join("operator/watches.yaml").is_file());
        let chart = chart::loader::load(dir.join("charts/hello")).unwrap();
        assert_eq!(chart.metadata.name, "hello");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
