//! What the operator's CR cache keeps per CR: the example `hello` chart's CR, as the
//! API server sends it once deployed (managed fields of three writers, the
//! `kubectl apply` annotation, the finalizer, a status with the NOTES and the deployed
//! manifest), decoded and trimmed the way the cache trims it — as the operator's
//! [`CustomResource`] (raw spec and status) and, for comparison, as kube's
//! `DynamicObject` trimmed as the cache trimmed it before (managed fields and the
//! annotation dropped, a stand-in for the manifest).
//!
//! Run with `cargo bench -p operator --bench cr_memory`; `RUDDER_BENCH_CRS` sets how
//! many CRs are decoded (default 10,000). Heap bytes are counted by this bench's own
//! allocator (requested sizes, without the allocator's overhead).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use kube::api::DynamicObject;
use operator::CustomResource;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Counts the bytes in use on the heap.
struct Counting;

static IN_USE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        IN_USE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        IN_USE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The hello chart's templates stand in for its rendered manifest (about as long).
fn manifest() -> String {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/charts/hello/templates"
    );
    ["configmap.yaml", "service.yaml", "deployment.yaml"]
        .iter()
        .map(|f| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The `i`th CR as the API server sends it in a LIST or watch event.
fn cr_json(i: usize, manifest: &str) -> String {
    let name = format!("hello-{i:05}");
    let spec = json!({"replicaCount": 1, "message": format!("Hello number {i}")});
    let applied = json!({
        "apiVersion": "demo.rudder.dev/v1alpha1", "kind": "Hello",
        "metadata": {"name": name, "namespace": "scale-001"}, "spec": spec,
    });
    let time = "2026-12-01T18:00:00Z";
    json!({
        "apiVersion": "demo.rudder.dev/v1alpha1",
        "kind": "Hello",
        "metadata": {
            "name": name,
            "namespace": "scale-001",
            "uid": format!("4d8f5a8e-0000-4000-8000-{i:012}"),
            "resourceVersion": format!("{}", 100_000 + i),
            "generation": 1,
            "creationTimestamp": time,
            "annotations": {LAST_APPLIED: applied.to_string()},
            "finalizers": ["helm.sdk.operatorframework.io/uninstall-release"],
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update",
                 "apiVersion": "demo.rudder.dev/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                              "f:spec": {".": {}, "f:message": {}, "f:replicaCount": {}}}},
                {"manager": "rudder", "operation": "Update",
                 "apiVersion": "demo.rudder.dev/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"helm.sdk.operatorframework.io/uninstall-release\"": {}}}}},
                {"manager": "rudder", "operation": "Update", "subresource": "status",
                 "apiVersion": "demo.rudder.dev/v1alpha1", "time": time, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {".": {}, "f:conditions": {}, "f:deployedRelease": {".": {}, "f:manifest": {}, "f:name": {}}}}},
            ],
        },
        "spec": spec,
        "status": {
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": time},
                {"type": "Deployed", "status": "True", "reason": "InstallSuccessful",
                 "message": format!("{name} serves \"Hello number {i}\" on port 80."),
                 "lastTransitionTime": time},
            ],
            "deployedRelease": {"name": name, "manifest": manifest},
        },
    })
    .to_string()
}

/// The cache's trimming of a `DynamicObject` before the operator had its own type.
fn slim_dynamic(cr: &mut DynamicObject) {
    cr.metadata.managed_fields = None;
    if let Some(a) = cr.metadata.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
    let manifest = cr
        .data
        .get_mut("status")
        .and_then(|s| s.get_mut("deployedRelease"))
        .and_then(|d| d.get_mut("manifest"));
    if let Some(Value::String(m)) = manifest {
        let hex: String = Sha256::digest(m.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        *m = format!("rudder.dev/manifest-sha256:{hex}");
    }
}

/// Heap bytes per CR that `decode` keeps for each of `texts` (besides the struct).
fn kept_per_cr<T>(texts: &[String], decode: impl Fn(&str) -> T) -> f64 {
    let mut kept: Vec<T> = Vec::with_capacity(texts.len());
    let before = IN_USE.load(Ordering::Relaxed);
    for t in texts {
        kept.push(decode(t));
    }
    let after = IN_USE.load(Ordering::Relaxed);
    let per = (after - before) as f64 / texts.len() as f64;
    drop(kept);
    per
}

fn main() {
    let count: usize = std::env::var("RUDDER_BENCH_CRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let manifest = manifest();
    let texts: Vec<String> = (0..count).map(|i| cr_json(i, &manifest)).collect();
    let wire = texts.iter().map(String::len).sum::<usize>() / count;

    let dynamic = kept_per_cr(&texts, |t| {
        let mut cr: DynamicObject = serde_json::from_str(t).expect("decodes");
        slim_dynamic(&mut cr);
        cr
    });
    let own = kept_per_cr(&texts, |t| {
        let mut cr: CustomResource = serde_json::from_str(t).expect("decodes");
        cr.slim_for_cache();
        cr
    });

    println!("# What the CR cache keeps per CR ({count} CRs of the hello chart)");
    println!();
    println!("CR as sent by the API server: {wire} bytes of JSON");
    println!(
        "{:<44} {:>10} {:>14}",
        "cached as", "struct", "heap + struct"
    );
    println!(
        "{:<44} {:>8} B {:>12.0} B",
        "DynamicObject (trimmed as before)",
        std::mem::size_of::<DynamicObject>(),
        dynamic + std::mem::size_of::<DynamicObject>() as f64
    );
    println!(
        "{:<44} {:>8} B {:>12.0} B",
        "operator::CustomResource (raw spec/status)",
        std::mem::size_of::<CustomResource>(),
        own + std::mem::size_of::<CustomResource>() as f64
    );
    println!(
        "for {count} CRs: {:.1} MiB as DynamicObject, {:.1} MiB as CustomResource",
        (dynamic + std::mem::size_of::<DynamicObject>() as f64) * count as f64 / 1048576.0,
        (own + std::mem::size_of::<CustomResource>() as f64) * count as f64 / 1048576.0
    );
}
