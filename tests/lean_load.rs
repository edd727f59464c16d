//! `digipology run` loads a game lean (`Package::load_lean`): the manifest's
//! entities stay text and are read one at a time. That must be invisible:
//! the same starting state for every example, and the same error — path and
//! message — for every broken manifest.

mod common;

use common::*;
use digipology_room::Package;

fn both(dir: &std::path::Path) -> (Result<String, String>, Result<String, String>) {
    let load = |lean: bool| -> Result<String, String> {
        let p = if lean {
            Package::load_lean(dir)
        } else {
            Package::load(dir)
        }
        .map_err(|e| e.to_string())?;
        p.initial_state(7)
            .map(|s| s.canonical_json())
            .map_err(|e| e.to_string())
    };
    (load(false), load(true))
}

#[test]
fn every_example_loads_lean_to_the_same_state() {
    let mut seen = 0;
    for entry in std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .flatten()
    {
        let (full, lean) = both(&entry.path());
        assert!(full.is_ok(), "{}: {full:?}", entry.path().display());
        assert_eq!(full, lean, "{}", entry.path().display());
        seen += 1;
    }
    assert!(seen >= 5);
}

#[test]
fn entities_keyed_by_id_load_lean_to_the_same_state() {
    let text = r#"{"seats": ["n"], "entities": {"b": {"tags": ["x"], "components": {"counter": {"value": 3}}},
        "a": {"id": "a", "components": {"transform": {"position": {"x": 1, "y": 2, "z": 3}}}},
        "b": {"props": {"k": 1}}, "\u00e9t\u00e9": {}}}"#;
    let dir = scratch("lean-keyed");
    std::fs::write(dir.join("game.json"), text).expect("write");
    let (full, lean) = both(&dir);
    assert!(full.is_ok(), "{full:?}");
    assert_eq!(full, lean);
}

#[test]
fn a_broken_manifest_fails_lean_exactly_as_it_fails_whole() {
    let cases = [
        r#"{"entities": 5}"#,
        r#"{"entities": null}"#,
        r#"{"entities": [{"id": "a"}, {"id": "b"}, {"tags": []}]}"#,
        r#"{"entities": [{"id": "a"}, {"id": "a"}]}"#,
        r#"{"entities": [{"id": "a", "components": {"die": {"faces": []}}}, 7]}"#,
        r#"{"entities": {"x": {"id": "y"}}}"#,
        r#"{"entities": {"x": {}, "x": {"tags": ["t"]}}}"#,
        r#"{"entities": [{"id": "a"}], "entities": [{"id": "b"}]}"#,
        r#"{"seats": 3, "entities": [{"id": "a"}]}"#,
        r#"{"entities": [{"id": "a"}], "stacks": {"s": {"items": ["zz"]}}}"#,
        r#"{"entities": [{"id": "a"},]}"#,
        r#"[1, 2]"#,
        r#"{"entities": [{"id": "a\u0000"}]}"#,
        r#"{"entities": {"b": {"tags": 5}, "a": {"id": "z"}}}"#,
        r#"{"entities": {"b": {"tags": 5}, "a": 7}}"#,
        r#"{"entities": {"": {}}}"#,
        r#"{"entities": {"a": {}, "a": {"id": "b"}}}"#,
        r#"{"entities": {"a": {}, }}"#,
        r#"{"entities": {"a\u00e9\n": {"components": {"die": {"faces": [1, {}]}}}}}"#,
    ];
    for (i, text) in cases.iter().enumerate() {
        let dir = scratch(&format!("lean-{i}"));
        std::fs::write(dir.join("game.json"), text).expect("write");
        let (full, lean) = both(&dir);
        assert_eq!(full, lean, "{text}");
    }
}
