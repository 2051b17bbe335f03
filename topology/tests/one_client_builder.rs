//! Every librdkafka client kledger makes — its processor, sinks, admin client, ingress, every
//! command, and the tests', benches' and harness's helpers — starts from the one builder,
//! `kafka::clients::client_at` (through `client_config` for a configuration), which applies
//! `kafka.common_properties`: the cluster's security settings reach every client. A call of
//! librdkafka's `ClientConfig` constructor anywhere else in the workspace fails here.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "vendor" | "target" | ".git" | "node_modules") {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_client_configuration_comes_from_the_one_builder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let builder = root.join("kafka/src/clients.rs");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(
        files.len() > 100,
        "the walk found the workspace: {}",
        files.len()
    );
    let needle = ["ClientConfig", "::new()"].concat();
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| f.canonicalize().ok() != builder.canonicalize().ok())
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(&needle)))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "clients built outside kafka::clients::client_at: {offenders:?}"
    );
    let text = std::fs::read_to_string(&builder).unwrap();
    assert_eq!(text.matches(&needle).count(), 1, "one builder");
}
