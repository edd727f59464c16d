//! Every ```lua block in docs/lua-api.md loads and runs without a script
//! error against the test table (the docs' examples are true).

mod common;

use common::*;
use serde_json::json;

fn blocks() -> Vec<String> {
    let doc = include_str!("../../docs/lua-api.md");
    let mut out = Vec::new();
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
