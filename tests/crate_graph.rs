//! The README's crate diagram is the workspace's: the "Dependencies among the
//! project's crates" block lists, for every member, exactly the members it
//! depends on as `cargo metadata` reports them (normal dependencies, optional
//! ones marked, dev-dependencies in `[dev: …]`). A crate added, removed or
//! rewired without its line in the README fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// A crate's edges to other members: normal (name, optional) and dev.
#[derive(Debug, Default, PartialEq)]
struct Edges {
    normal: BTreeSet<(String, bool)>,
    dev: BTreeSet<String>,
}

fn from_cargo_metadata(repo: &Path) -> BTreeMap<String, Edges> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut graph = BTreeMap::new();
    for p in packages {
        let mut edges = Edges::default();
        for d in p["dependencies"].as_array().unwrap() {
            let name = d["name"].as_str().unwrap();
            if !members.contains(name) {
                continue;
            }
            match d["kind"].as_str() {
                None => {
                    edges
                        .normal
                        .insert((name.to_owned(), d["optional"].as_bool() == Some(true)));
                }
                Some("dev") => {
                    edges.dev.insert(name.to_owned());
                }
                Some(_) => {}
            }
        }
        graph.insert(p["name"].as_str().unwrap().to_owned(), edges);
    }
    graph
}

/// `name -> a, b (optional: …), c   [dev: d, e]` lines of the README block.
fn from_readme(readme: &str) -> BTreeMap<String, Edges> {
    let start = readme
        .find("Dependencies among the project's crates")
        .expect("the README's crate graph heading");
    let block = &readme[start..];
    let open = block.find("```\n").expect("the block opens") + 4;
    let close = open + block[open..].find("```").expect("the block closes");
    let mut graph = BTreeMap::new();
    for line in block[open..close].lines() {
        let (name, rest) = line.split_once("->").expect("`name -> deps` lines");
        let (normal, dev) = match rest.split_once("[dev:") {
            Some((n, d)) => (n, d.trim().trim_end_matches(']')),
            None => (rest, ""),
        };
        let mut edges = Edges::default();
        for dep in normal.split(',').map(str::trim) {
            if dep == "(none)" || dep.is_empty() {
                continue;
            }
            match dep.split_once(" (optional") {
                Some((dep, _)) => edges.normal.insert((dep.to_owned(), true)),
                None => edges.normal.insert((dep.to_owned(), false)),
            };
        }
        for dep in dev.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            edges.dev.insert(dep.to_owned());
        }
        graph.insert(name.trim().to_owned(), edges);
    }
    graph
}

#[test]
fn the_readme_crate_graph_is_cargo_metadata() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let written = from_readme(&readme);
    let actual = from_cargo_metadata(repo);
    assert!(actual.len() >= 10, "{actual:?}");
    for (name, edges) in &actual {
        assert_eq!(
            written.get(name),
            Some(edges),
            "README's line for {name} (cargo metadata says {edges:?})"
        );
    }
    let extra: Vec<&String> = written
        .keys()
        .filter(|n| !actual.contains_key(*n))
        .collect();
    assert!(
        extra.is_empty(),
        "README lists crates that are not members: {extra:?}"
    );
}

/// The cuts the architecture promises: the training side and the launcher
/// link the contract and nothing of the analysis; the views render only.
#[test]
fn training_processes_and_the_launcher_depend_only_on_the_contract() {
    let graph = from_cargo_metadata(Path::new(env!("CARGO_MANIFEST_DIR")));
    let analysis = ["probe", "probe-load", "probe-kineto", "probe-explain"];
    for krate in ["comm", "ddp", "ddp-cuda", "probe-launch"] {
        for (dep, _) in &graph[krate].normal {
            assert!(
                !analysis.contains(&dep.as_str()),
                "{krate} depends on {dep}"
            );
        }
    }
    for dep in &graph["probe-reports"].normal {
        assert_ne!(dep.0, "probe-launch", "reports must not run jobs");
        assert_ne!(dep.0, "probe-series", "reports must not run jobs");
    }
}
