//! The canonical document is streamed (one entity at a time into the hash
//! or the text), and the stream is exactly the text of the value-built
//! document (docs/determinism.md): same bytes; and the state hash and
//! digests are those the definition gives for that document.

mod common;

use digipology_kernel::{state_from_game, Kernel, NoScripts, State};
use serde_json::Value;

fn check(state: &State, what: &str) {
    assert_eq!(
        state.canonical_json(),
        state.to_value(true).to_canonical_json(),
        "{what}: streamed text"
    );
    let (hash, paths) = common::hash_by_definition(state);
    assert_eq!(state.digest_map(), paths, "{what}: digests");
    assert_eq!(state.hash(), hash, "{what}: hash");
}

#[test]
fn every_example_streams_the_bytes_of_its_value_document() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).expect("examples").flatten() {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("game.json")) else {
            continue;
        };
        let game: Value = serde_json::from_str(&text).expect("game.json");
        let mut k = Kernel::new(state_from_game(&game, 3).expect("loads"));
        check(k.state(), &dir.display().to_string());
        if let Ok(actions) = std::fs::read_to_string(dir.join("actions.jsonl")) {
            for line in actions.lines().filter(|l| !l.trim().is_empty()) {
                k.process_line(line, &mut NoScripts);
            }
            check(k.state(), &format!("{} after its actions", dir.display()));
        }
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} examples");
}

#[test]
fn ids_beyond_the_basic_plane_are_ordered_by_utf16_in_the_stream_too() {
    let game = serde_json::json!({
        "entities": [
            {"id": "\u{ff61}", "components": {}},
            {"id": "\u{1f600}", "components": {}},
            {"id": "a", "components": {}}
        ]
    });
    let state = state_from_game(&game, 1).expect("loads");
    check(&state, "ids beyond U+E000");
}

#[test]
fn every_component_streams_as_its_value_form() {
    let game = serde_json::json!({
        "entities": [
            {"id": "all", "tags": ["b", "a\"q"], "props": {"z": 1, "a": [true, null, "x"], "\u{ff61}": 2},
             "components": {
                "transform": {"position": {"x": 1.5, "y": -0.0, "z": 1e-7}},
                "grabbable": {"enabled": false}, "stackable": {}, "deck": {}, "button": {"enabled": false},
                "flippable": {"flipped": true}, "lockable": {"locked": true},
                "container": {"items": ["c1"], "capacity": 3},
                "die": {"faces": [1, "two", 3], "value": "two"},
                "counter": {"value": 2.5, "min": -1, "max": 10},
                "text": {"value": "line\nbreak \u{1f600}"},
                "snap_point": {"capacity": 2, "tags": ["t2", "t1"], "radius": 0.5},
                "zone": {"halfExtents": {"x": 1, "y": 2, "z": 3}}
             }},
            {"id": "c1", "components": {"flippable": {}, "lockable": {}, "counter": {}}},
            {"id": "bare"}
        ]
    });
    let state = state_from_game(&game, 1).expect("loads");
    check(&state, "every component");
}
