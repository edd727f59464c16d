//! The repository's maps stay true: each crate's README lists every source
//! file of the crate (a newcomer finds a file's purpose in one place), and
//! no document points at a file outside the repository or at a repository
//! file that is not there.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !matches!(name, "target" | ".git" | "third_party") {
                files_under(&p, exts, out);
            }
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| exts.contains(&x))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_crate_readme_lists_every_source_file() {
    for krate in ["kernel", "lua-runtime", "room"] {
        let dir = root().join(krate);
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|e| panic!("{krate}/README.md: {e}"));
        let mut files = Vec::new();
        files_under(&dir.join("src"), &["rs", "lua"], &mut files);
        assert!(!files.is_empty(), "{krate}: no sources found");
        for f in files {
            let rel = f
                .strip_prefix(&dir)
                .expect("inside the crate")
                .to_string_lossy()
                .replace('\\', "/");
            // A family of files may be listed as one row: `src/actions/*.rs`.
            let glob = match rel.rsplit_once('/') {
                Some((parent, _)) => format!(
                    "`{parent}/*.{}`",
                    f.extension().and_then(|x| x.to_str()).unwrap_or("")
                ),
                None => String::new(),
            };
            assert!(
                readme.contains(&format!("`{rel}`")) || readme.contains(&glob),
                "{krate}/README.md does not list `{rel}`"
            );
        }
    }
}

/// Paths a document names in backticks or links that look like repository
/// files: `kernel/src/txn.rs`, `docs/formats.md`, `../x`.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push(part.to_owned());
        }
    }
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_owned());
        }
    }
    out
}

#[test]
fn no_document_points_outside_the_repository_or_at_a_missing_file() {
    let mut docs = Vec::new();
    files_under(&root(), &["md"], &mut docs);
    assert!(docs.len() >= 8, "found only {} documents", docs.len());
    let mut checked = 0;
    for doc in docs {
        let text = std::fs::read_to_string(&doc).expect("read");
        let rel_doc = doc
            .strip_prefix(root())
            .expect("inside")
            .display()
            .to_string();
        for p in named_paths(&text) {
            let p = p.split('#').next().unwrap_or("").trim().to_owned();
            assert!(
                !p.starts_with("../shared")
                    && !p.contains("/shared/DESIGN")
                    && !p.starts_with("/work"),
                "{rel_doc} points outside the repository: {p}"
            );
            // Only plain relative file paths with a known extension and
            // no spaces, globs or placeholders are checked for existence.
            let looks_like_file = !p.is_empty()
                && !p.contains(' ')
                && !p.contains('*')
                && !p.contains('<')
                && !p.contains('{')
                && !p.starts_with("http")
                && [".rs", ".md", ".lua", ".toml", ".json", ".c"]
                    .iter()
                    .any(|x| p.ends_with(x))
                && p.contains('/');
            if !looks_like_file {
                continue;
            }
            let from_root = root().join(&p);
            let from_doc = doc.parent().expect("dir").join(&p);
            // A crate README names files relative to its crate.
            let exists = from_root.exists() || from_doc.exists();
            assert!(
                exists || is_example_path(&p),
                "{rel_doc} names {p}, which is not in the repository"
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} paths checked");
}

/// Paths the docs use as examples of a game's own layout (inside a game
/// folder a creator writes), not repository files.
fn is_example_path(p: &str) -> bool {
    p.starts_with("scripts/")
        || p.starts_with("tests/") && !p.ends_with(".rs")
        || p.starts_with("my-game/")
        || p.starts_with("game/")
}
