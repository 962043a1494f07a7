//! Import circles between the modules of a crate: a module `a` that reaches `b` and `b` that reaches `a` (through
//! any number of others) cannot be understood, tested or moved one at a time. Read from the source: each `.rs` file
//! below the crate's `src/` is a module (`mod.rs`, `lib.rs` and `main.rs` name their folder); `a` reaches `b` when
//! one of its `use` lines, or a `crate::`/`super::` path in its code, names `b` or an item of `b`. Comments and
//! `#[cfg(test)]` modules do not count, and neither do paths that start with the crate's dependencies.
//!
//!   cargo xtask circles        (src/ and simulator/src; fails on any circle)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module, as the path of its names from the crate root (empty: the root).
pub type Module = Vec<String>;

/// Every module of the crate whose source folder is `src`, with the modules it reaches.
pub fn graph(src: &Path) -> anyhow::Result<BTreeMap<Module, BTreeSet<Module>>> {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files)?;
    let modules: BTreeSet<Module> = files.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let code = code_of(&std::fs::read_to_string(file)?);
        let mut reached = BTreeSet::new();
        for path in paths(&code) {
            if let Some(target) = resolve(module, &path, &modules) {
                if &target != module {
                    reached.insert(target);
                }
            }
        }
        graph.insert(module.clone(), reached);
    }
    Ok(graph)
}

/// The circles of `graph`: each a set of two or more modules that all reach one another, names joined by `::`.
pub fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    // Kosaraju: the modules finished in order on the graph, then reached back on the reversed one.
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for start in graph.keys() {
        finish(start, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (from, tos) in graph {
        for to in tos {
            reversed.entry(to).or_default().push(from);
        }
    }
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for start in order.iter().rev() {
        if placed.contains(start) {
            continue;
        }
        let mut component = Vec::new();
        let mut stack = vec![*start];
        placed.insert(*start);
        while let Some(module) = stack.pop() {
            component.push(shown(module));
            for next in reversed.get(module).into_iter().flatten() {
                if placed.insert(*next) {
                    stack.push(*next);
                }
            }
        }
        if component.len() > 1 {
            component.sort();
            out.push(component);
        }
    }
    out.sort();
    out
}

/// Depth-first, without recursion: pushes each module after everything it reaches.
fn finish<'g>(
    start: &'g Module,
    graph: &'g BTreeMap<Module, BTreeSet<Module>>,
    seen: &mut BTreeSet<&'g Module>,
    order: &mut Vec<&'g Module>,
) {
    if !seen.insert(start) {
        return;
    }
    let mut stack: Vec<(&Module, Vec<&Module>)> = vec![(start, graph[start].iter().collect())];
    while let Some((module, next)) = stack.last_mut() {
        match next.pop() {
            Some(to) if graph.contains_key(to) && seen.insert(to) => {
                let onward = graph[to].iter().collect();
                stack.push((to, onward));
            }
            Some(_) => {}
            None => {
                order.push(module);
                stack.pop();
            }
        }
    }
}

fn shown(module: &Module) -> String {
    if module.is_empty() {
        "<crate root>".into()
    } else {
        module.join("::")
    }
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<Module, PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            collect(root, &path, files)?;
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(root)?.with_extension("");
        let mut names: Module = relative.iter().map(|n| n.to_string_lossy().into_owned()).collect();
        if names.last().is_some_and(|n| n == "mod" || n == "lib" || n == "main") {
            names.pop();
        }
        // Test files kept apart (`foo_tests.rs` included with `#[path]`) are tests.
        if names.last().is_some_and(|n| n.ends_with("_tests")) {
            continue;
        }
        files.insert(names, path);
    }
    Ok(())
}

/// The code of a file: without its `#[cfg(test)]` part and without comments.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| if line.trim_start().starts_with("//") { "" } else { line.split(" //").next().unwrap_or(line) })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path the code names from `crate`, `super` or `self`: each `use` line (its braces expanded) and each such
/// path written inline.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if before.is_none_or(|c| c.is_whitespace() || c == '{' || c == ')') {
            let compact: String = after[..end].chars().filter(|c| !c.is_whitespace()).collect();
            out.extend(expand(&compact));
        }
        rest = &after[end..];
    }
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let begin = from + at;
            let preceded = code[..begin].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_');
            let path: String =
                code[begin..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            if !preceded {
                out.push(path.trim_end_matches(':').to_string());
            }
            from = begin + start.len();
        }
    }
    out
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e`; `x as y` as `x`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.split("as").next().filter(|_| !tree.contains('{')).unwrap_or(tree);
    let Some(open) = tree.find('{') else { return vec![tree.trim_end_matches("::").to_string()] };
    let prefix = &tree[..open];
    let inner = tree[open + 1..].strip_suffix('}').unwrap_or(&tree[open + 1..]);
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0, String::new());
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts.iter().filter(|p| !p.is_empty()).flat_map(|p| expand(&format!("{prefix}{p}"))).collect()
}

/// The module a path from `module` names: the longest of its prefixes that is a module.
fn resolve(module: &Module, path: &str, modules: &BTreeSet<Module>) -> Option<Module> {
    let mut names = path.split("::");
    let mut full: Module = match names.next()? {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => {
            let mut up = module.clone();
            up.pop();
            up
        }
        _ => return None,
    };
    let mut rest: Vec<&str> = names.collect();
    while rest.first() == Some(&"super") {
        full.pop();
        rest.remove(0);
    }
    full.extend(rest.iter().map(|s| s.to_string()));
    (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| modules.contains(m))
}

/// The crates whose modules must reach one another one way only.
pub const CRATES: [&str; 2] = ["src", "simulator/src"];

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str) -> Module {
        path.split("::").filter(|s| !s.is_empty()).map(String::from).collect()
    }

    #[test]
    fn use_trees_and_inline_paths_are_read() {
        let found = paths("use crate::a::{b, c::{d, e as f}};\nfn x() { super::g::h(); crate::i::J; }\n");
        for wanted in ["crate::a::b", "crate::a::c::d", "crate::a::c::e", "super::g::h", "crate::i::J"] {
            assert!(found.iter().any(|p| p == wanted), "{wanted} in {found:?}");
        }
    }

    #[test]
    fn a_circle_is_found_and_a_one_way_graph_has_none() {
        let edges = |pairs: &[(&str, &str)]| {
            let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
            for (from, to) in pairs {
                g.entry(module(from)).or_default().insert(module(to));
                g.entry(module(to)).or_default();
            }
            g
        };
        assert!(circles(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
        let found = circles(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
        assert_eq!(found, vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    }

    #[test]
    fn super_and_crate_paths_name_the_longest_module_they_reach() {
        let modules: BTreeSet<Module> = ["", "plan", "plan::gate", "plan::resolve"].iter().map(|m| module(m)).collect();
        assert_eq!(resolve(&module("plan::gate"), "super::resolve::Resolved", &modules), Some(module("plan::resolve")));
        assert_eq!(resolve(&module("plan::gate"), "crate::plan::Plan", &modules), Some(module("plan")));
        assert_eq!(resolve(&module("plan::gate"), "std::fmt", &modules), None);
    }

    #[test]
    fn numos_crates_have_no_import_circle() {
        let root = crate::repo_root();
        for src in CRATES {
            let found = circles(&graph(&root.join(src)).unwrap_or_default());
            assert!(found.is_empty(), "{src}: modules that reach one another: {found:?}");
        }
    }
}
