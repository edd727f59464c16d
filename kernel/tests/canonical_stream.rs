//! The canonical document is streamed (one entity at a time into the hash
//! or the text), and the stream is exactly the text of the value-built
//! document (docs/determinism.md): same bytes, same hash.

use digipology_kernel::{state_from_game, Kernel, NoScripts, State};
use serde_json::Value;

fn check(state: &State, what: &str) {
    assert_eq!(
        state.canonical_json(),
        state.to_value(true).to_canonical_json(),
        "{what}: streamed text"
    );
    let slow = blake3::hash(state.to_value(false).to_canonical_json().as_bytes())
        .to_hex()
        .to_string();
    assert_eq!(state.hash(), slow, "{what}: streamed hash");
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
