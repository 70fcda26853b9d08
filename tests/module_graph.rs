//! The workspace's modules form no cycles: within each crate, the graph of
//! `use crate::…` / `crate::…` / `super::…` references between its source
//! files (tests excluded, and a module's references to its own ancestors or
//! descendants, which `mod` and `pub use` make normal) has no strongly
//! connected component of two or more files. A cycle (say `error` wrapping
//! `amp`'s error while `amp` boxes `error`'s) means two modules can only be
//! read, changed and tested together; this test names the files of each.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source folders of the workspace's members, from the root `Cargo.toml`'s
/// `members` list, so that a new crate is checked without being listed here.
fn crate_sources(repo: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members = ["))
        .expect("the root Cargo.toml lists its members on one line");
    let members: Vec<PathBuf> = line
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|m| repo.join(m).join("src"))
        .collect();
    assert!(members.len() >= 10, "members: {members:?}");
    members
}

/// `a/b.rs` and `a/b/mod.rs` → `["a", "b"]`; `lib.rs`/`main.rs` → `[]`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module paths a file's code (before its `#[cfg(test)]` module) names.
fn references(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::").or_else(|| rest.find("super::")) {
            let is_super = rest[i..].starts_with("super::");
            // `super::` of a file module is its parent; of a mod.rs, its grandparent... of
            // its own module's parent either way.
            let (base, tail) = if is_super {
                let mut base = module.to_vec();
                base.pop();
                (base, &rest[i + "super::".len()..])
            } else {
                (Vec::new(), &rest[i + "crate::".len()..])
            };
            // `crate::{a, b::C}` names several paths.
            let heads: Vec<&str> = match tail.strip_prefix('{') {
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![tail],
            };
            for head in heads {
                let mut path = base.clone();
                path.extend(
                    head.split("::")
                        .map(|p| {
                            let end = p
                                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                                .unwrap_or(p.len());
                            &p[..end]
                        })
                        .take_while(|p| !p.is_empty() && *p != "self")
                        .map(str::to_owned),
                );
                out.push(path);
            }
            rest = &tail[tail.len().min(1)..];
        }
    }
    out
}

fn is_prefix(a: &[String], b: &[String]) -> bool {
    a.len() <= b.len() && a == &b[..a.len()]
}

#[test]
fn no_crate_has_a_module_cycle() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for root in crate_sources(&repo) {
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> = files
            .iter()
            .map(|f| (module_of(&root, f), f.clone()))
            .collect();
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file).unwrap();
            for path in references(&text, module) {
                // The longest module that the path starts with.
                let Some(target) = (0..=path.len())
                    .rev()
                    .map(|n| path[..n].to_vec())
                    .find(|p| modules.contains_key(p))
                else {
                    continue;
                };
                if is_prefix(&target, module) || is_prefix(module, &target) {
                    continue;
                }
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
        for scc in strongly_connected(&modules.keys().cloned().collect::<Vec<_>>(), &edges) {
            if scc.len() > 1 {
                let names: Vec<String> = scc
                    .iter()
                    .map(|m| {
                        modules[m]
                            .strip_prefix(&repo)
                            .unwrap()
                            .display()
                            .to_string()
                    })
                    .collect();
                cycles.push(names.join(" <-> "));
            }
        }
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

/// Tarjan's strongly connected components.
fn strongly_connected(
    nodes: &[Vec<String>],
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit(s: &mut State<'_>, v: &Vec<String>) {
        let i = s.index.len();
        s.index.insert(v.clone(), i);
        s.low.insert(v.clone(), i);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let next: Vec<Vec<String>> = s
            .edges
            .get(v)
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default();
        for w in &next {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v.clone(), lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v.clone(), lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = &w == v;
                scc.push(w);
                if done {
                    break;
                }
            }
            s.out.push(scc);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}
