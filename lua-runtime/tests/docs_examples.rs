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
        let system = |ty: &str, payload: serde_json::Value| json!({"type": ty, "source": {"kind": "system"}, "payload": payload});
        for action in [
            system(
                "system.seat_assign",
                json!({"playerId": "p1", "seatId": "north"}),
            ),
            system(
                "system.seat_assign",
                json!({"playerId": "p2", "seatId": "south"}),
            ),
            player("p1", "entity.grab", json!({"entityId": "card"})),
            player(
                "p1",
                "entity.drop",
                json!({"entityId": "card", "transform": t}),
            ),
            player("p1", "entity.flip", json!({"entityId": "card"})),
            player("p1", "button.press", json!({"entityId": "btn"})),
            player(
                "p2",
                "counter.add",
                json!({"entityId": "score", "amount": 1}),
            ),
        ] {
            outs.push(k.process_json(&action, &mut host));
        }
        // Whatever the example asked or armed runs too: every open prompt is
        // answered (its default, else its first choice, else yes / its
        // minimum) and every scheduled timer fires.
        let doc: serde_json::Value =
            serde_json::from_str(&k.state().canonical_json()).expect("state");
        let prompts = doc["prompts"].as_object().cloned().unwrap_or_default();
        for (id, p) in prompts.iter().filter(|(_, p)| p["status"] == "open") {
            let answer = match p["kind"].as_str() {
                Some("confirm") => json!(true),
                Some("number") => p["min"].clone(),
                _ if !p["default"].is_null() => p["default"].clone(),
                _ => p["choices"][0].clone(),
            };
            let who = p["playerId"].as_str().unwrap_or("p1");
            outs.push(k.process_json(
                &player(
                    who,
                    "prompt.respond",
                    json!({"promptId": id, "response": answer}),
                ),
                &mut host,
            ));
        }
        let doc: serde_json::Value =
            serde_json::from_str(&k.state().canonical_json()).expect("state");
        for id in doc["timers"]
            .as_object()
            .cloned()
            .unwrap_or_default()
            .keys()
        {
            outs.push(k.process_json(
                &system("system.timer_fire", json!({"timerId": id})),
                &mut host,
            ));
        }
        for out in &outs {
            for (ty, data) in events(out) {
                assert_ne!(ty, "script.error", "example {i} failed: {data}\n{src}");
            }
        }
        // A game's own views, when the example defines them, answer.
        for seat in [Some("north"), None] {
            if let Some(Err(f)) = host.view(k.state(), seat) {
                panic!("example {i}: {} failed: {}\n{src}", f.function, f.message);
            }
        }
    }
}
