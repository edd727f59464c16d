//! The modules of each library crate (kernel, Lua runtime, room) form
//! floors: no module reaches (through `crate::…` paths) a module that
//! reaches back to it, directly or through others. A newcomer can read them
//! bottom to top. (Parent-to-child declarations, `mod x;`, are not
//! `crate::` paths and do not count.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name (`actions::deck`, `kernel`) → the modules its code names.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read src").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut g = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(root).expect("inside").with_extension("");
        let mut name = rel.to_string_lossy().replace('/', "::");
        if let Some(parent) = name.strip_suffix("::mod") {
            name = parent.to_owned();
        }
        let text = std::fs::read_to_string(&f).expect("read");
        let mut deps = BTreeSet::new();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let first: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let after = &rest[first.len()..];
                let second: String = after
                    .strip_prefix("::")
                    .unwrap_or("")
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let child = root.join(&first).join(format!("{second}.rs"));
                let dep = if !second.is_empty() && child.exists() {
                    format!("{first}::{second}")
                } else {
                    first
                };
                if dep != name && !dep.is_empty() {
                    deps.insert(dep);
                }
            }
        }
        g.insert(name, deps);
    }
    g
}

/// A cycle through `start`, if any (depth-first).
fn cycle_from(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in g.get(&at).into_iter().flatten() {
            if next == start {
                let mut p = path.clone();
                p.push(next.clone());
                return Some(p);
            }
            if g.contains_key(next) && seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_library_crate_has_an_import_loop() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (krate, at_least) in [("kernel", 25), ("lua-runtime", 14), ("room", 4)] {
        let root = workspace.join(krate).join("src");
        let g = graph(&root);
        assert!(g.len() >= at_least, "{krate}: read {} modules", g.len());
        for m in g.keys() {
            if let Some(c) = cycle_from(&g, m) {
                panic!("{krate}: import loop: {}", c.join(" -> "));
            }
        }
    }
}
