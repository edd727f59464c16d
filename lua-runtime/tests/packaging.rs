//! What the crate embeds: every file its sources embed
//! (`include_str!`/`include_bytes!`) lies inside the crate directory, except
//! the creator API, `prelude.lua` at the repository's root, where the
//! project's layout puts it for creators to read. The crate is not
//! published alone (`publish = false`), so nothing else may lie outside.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_embedded_file_is_inside_the_crate_but_the_creator_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("manifest");
    assert!(
        !manifest.contains("exclude") && !manifest.contains("include"),
        "the crate's manifest narrows what it packages; this test assumes it does not"
    );
    let root = root.canonicalize().expect("crate dir");
    let prelude = root
        .join("../prelude.lua")
        .canonicalize()
        .expect("prelude.lua at the repository's root");
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut embedded = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            for (i, _) in text.match_indices(macro_name) {
                let rest = &text[i + macro_name.len()..];
                let rel = &rest[..rest.find('"').expect("closing quote")];
                let path = f.parent().expect("dir").join(rel);
                let path = path
                    .canonicalize()
                    .unwrap_or_else(|e| panic!("{}: {rel}: {e}", f.display()));
                assert!(
                    path.starts_with(&root) || path == prelude,
                    "{} embeds {}, outside the crate: it would not be packaged",
                    f.display(),
                    path.display()
                );
                embedded.push(path);
            }
        }
    }
    let lua: Vec<_> = embedded
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "lua"))
        .collect();
    assert_eq!(lua.len(), 3, "the prelude's three files: {lua:?}");
    assert!(
        lua.contains(&&prelude),
        "the creator API is prelude.lua: {lua:?}"
    );
}
