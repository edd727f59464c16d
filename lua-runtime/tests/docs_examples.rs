//! Every ```lua block in the repository's documentation (README.md and
//! docs/*.md) loads and runs without a script error against the test table
//! (the docs' examples are true).

mod common;

use common::*;
use serde_json::json;

/// The documentation files: README.md and every docs/*.md.
fn doc_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn blocks() -> Vec<String> {
    let mut out = Vec::new();
    for file in doc_files() {
        let doc = std::fs::read_to_string(&file).expect("doc readable");
        let mut current: Option<String> = None;
        for line in doc.lines() {
            match (&mut current, line.trim_end()) {
                (None, "```lua") => current = Some(String::new()),
                (Some(_), "```") => out.extend(current.take()),
                (Some(buf), l) => {
                    buf.push_str(l);
                    buf.push('\n');
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn every_lua_example_in_the_api_reference_runs() {
    let examples = blocks();
    assert!(
        examples.len() >= 10,
        "expected the reference to have examples, found {}",
        examples.len()
    );
    let t = json!({"position": {"x": 3, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}});
    for (i, src) in examples.iter().enumerate() {
        let (mut k, mut host) = try_room(
            &[("main", src, &[("global", None)])],
            digipology_lua::Limits::default(),
        )
        .unwrap_or_else(|e| panic!("example {i} does not load: {e}\n{src}"));
        let mut outs = start(&mut k, &mut host);
        for action in [
            player("p1", "entity.grab", json!({"entityId": "card"})),
            player(
                "p1",
                "entity.drop",
                json!({"entityId": "card", "transform": t}),
            ),
            player("p1", "entity.flip", json!({"entityId": "card"})),
            player("p1", "button.press", json!({"entityId": "btn"})),
        ] {
            outs.push(k.process_json(&action, &mut host));
        }
        for out in &outs {
            for (ty, data) in events(out) {
                assert_ne!(ty, "script.error", "example {i} failed: {data}\n{src}");
            }
        }
    }
}
