//! Shared helpers for the conformance tests: a standard table, action
//! builders, and assertions that a rejection changed nothing but the
//! sequence.
#![allow(dead_code)]

use digipology_kernel::{state_from_game, Kernel, NoScripts, Outcome, ScriptHost};
use serde_json::{json, Value};

/// The standard test table: one entity per rule the tests need.
pub fn standard_game() -> Value {
    json!({
        "seats": ["north", "south"],
        "settings": {"mode": "test"},
        "entities": [
            {"id": "card", "components": {"grabbable": {}, "flippable": {}, "stackable": {}}},
            {"id": "locked_card", "components": {"grabbable": {}, "lockable": {"locked": true}}},
            {"id": "disabled_card", "components": {"grabbable": {"enabled": false}, "flippable": {}}},
            {"id": "plain", "components": {}},
            {"id": "c1", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "c2", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "c3", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["c1", "c2", "c3"]}}},
            {"id": "deck_off", "components": {"deck": {"enabled": false}, "container": {}}},
            {"id": "deck_no_container", "components": {"deck": {}}},
            {"id": "bag", "components": {"container": {"capacity": 2}}},
            {"id": "hand", "components": {"container": {}}},
            {"id": "d6", "components": {"die": {}, "grabbable": {}}},
            {"id": "coin", "components": {"die": {"faces": ["heads", "tails"]}}},
            {"id": "score", "components": {"counter": {"value": 5, "min": 0, "max": 10}}},
            {"id": "free", "components": {"counter": {}}},
            {"id": "btn", "components": {"button": {}}},
            {"id": "btn_off", "components": {"button": {"enabled": false}}},
            {"id": "sign", "components": {"text": {"value": "hi"}}},
            {"id": "lockbox", "components": {"lockable": {}, "grabbable": {}}},
            {"id": "s_bottom", "components": {"grabbable": {}, "stackable": {}}},
            {"id": "s_top", "components": {"grabbable": {}, "stackable": {}}}
        ],
        "stacks": {"s1": {"items": ["s_bottom", "s_top"]}}
    })
}

/// A kernel over `game` with the game started (seq 0).
pub fn started(game: &Value, seed: u64) -> Kernel {
    let state = state_from_game(game, seed).expect("test game loads");
    let mut k = Kernel::new(state);
    let out = k.process_json(&system("system.game_start", json!({})), &mut NoScripts);
    assert!(out.accepted(), "{:?}", out.rejection());
    k
}

/// The standard table, started, with players p1 (seated north) and p2.
pub fn table() -> Kernel {
    let mut k = started(&standard_game(), 1);
    for a in [
        system(
            "system.player_joined",
            json!({"playerId": "p1", "name": "Ann"}),
        ),
        system("system.player_joined", json!({"playerId": "p2"})),
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
    ] {
        let out = k.process_json(&a, &mut NoScripts);
        assert!(out.accepted(), "{:?}", out.rejection());
    }
    k
}

/// An action with a player source.
pub fn player(p: &str, ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "player", "playerId": p}, "payload": payload})
}

/// An action with the system source.
pub fn system(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "system"}, "payload": payload})
}

/// An action with a script source.
pub fn script(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "script", "scriptId": "main", "bindingId": "global"}, "payload": payload})
}

/// Events as (type, data) pairs. Every written line is also checked against
/// the slow, obvious construction (the data built as a value, then written
/// canonically).
pub fn events(out: &Outcome) -> Vec<(String, Value)> {
    out.events
        .iter()
        .map(|e| {
            let text = e.to_json_line();
            let data = e.kind.data().to_canonical_json();
            assert!(
                text.ends_with(&format!(",\"data\":{data}}}")),
                "the written line {text} differs from the canonical data {data}"
            );
            let line: Value = serde_json::from_str(&text).expect("event line is JSON");
            (e.type_name().to_owned(), line["data"].clone())
        })
        .collect()
}

/// Processes an action that must be accepted; returns its events.
pub fn accept(k: &mut Kernel, action: Value) -> Vec<(String, Value)> {
    accept_with(k, action, &mut NoScripts)
}

/// As [`accept`], with a script host.
pub fn accept_with(
    k: &mut Kernel,
    action: Value,
    host: &mut dyn ScriptHost,
) -> Vec<(String, Value)> {
    let seq = k.state().sequence;
    let out = k.process_json(&action, host);
    assert!(
        out.accepted(),
        "expected acceptance of {action}, got {:?}",
        out.rejection()
    );
    assert_eq!(out.seq, seq);
    assert_eq!(k.state().sequence, seq + 1);
    events(&out)
}

/// Processes an action that must be rejected with `code`: asserts the single
/// `action.rejected` event, the unchanged state hash and the advanced
/// sequence. Returns the rejection message.
pub fn reject(k: &mut Kernel, action: Value, code: &str) -> String {
    reject_with(k, action, code, &mut NoScripts)
}

/// As [`reject`], with a script host.
pub fn reject_with(k: &mut Kernel, action: Value, code: &str, host: &mut dyn ScriptHost) -> String {
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let out = k.process_json(&action, host);
    let ev = events(&out);
    assert_eq!(
        ev[0].0, "action.rejected",
        "expected rejection of {action}, got {ev:?}"
    );
    assert_eq!(
        ev[0].1["code"],
        json!(code),
        "wrong code for {action}: {ev:?}"
    );
    assert_eq!(out.rejection().map(|r| r.code.as_str()), Some(code));
    assert_eq!(
        k.state_hash(),
        hash,
        "rejected {action} changed the state hash"
    );
    assert_eq!(
        k.state().sequence,
        seq + 1,
        "rejected {action} did not advance the sequence"
    );
    assert_eq!(out.seq, seq);
    ev[0].1["message"].as_str().unwrap_or_default().to_owned()
}

/// The canonical JSON of one entity's component.
pub fn component(k: &Kernel, entity: &str, name: &str) -> Value {
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state is JSON");
    doc["entities"][entity]["components"][name].clone()
}

/// The state hash and every leaf's short digest by their definition in
/// docs/determinism.md, computed from the canonical document alone: each
/// member of the id-keyed sections (`entities`, `players`, `prompts`,
/// `seats`, `settings`, `stacks`, `storage`, `timers`) is one leaf
/// (`[section, key, value]`), `kernelVersion` and `rng` one leaf each
/// (`[section, value]`); a leaf's digest is the 128-bit XXH3 hash of its
/// canonical JSON; the hash is blake3 of the digests' sum modulo 2^128 as
/// 16 little-endian bytes; a short digest is the first 16 hex digits of a
/// leaf digest.
pub fn hash_by_definition(
    state: &digipology_kernel::State,
) -> (String, std::collections::BTreeMap<String, String>) {
    use digipology_kernel::Value as V;
    let V::Object(top) = state.to_value(false) else {
        panic!("the document is an object")
    };
    let mut sum = 0u128;
    let mut paths = std::collections::BTreeMap::new();
    let mut leaf = |path: String, v: V| {
        let d = xxhash_rust::xxh3::xxh3_128(v.to_canonical_json().as_bytes());
        sum = sum.wrapping_add(d);
        paths.insert(path, format!("{d:032x}")[..16].to_owned());
    };
    for (section, value) in top {
        match value {
            V::Object(members) if section != "rng" => {
                for (key, v) in members {
                    leaf(
                        format!("{section}.{key}"),
                        V::Array(vec![V::from(section.as_str()), V::from(key), v]),
                    );
                }
            }
            v => leaf(section.clone(), V::Array(vec![V::from(section), v])),
        }
    }
    (blake3::hash(&sum.to_le_bytes()).to_hex().to_string(), paths)
}

/// A script host whose handler fails on every event: whatever an action
/// did is rolled back.
pub fn failing_host() -> digipology_kernel::ClosureHost {
    digipology_kernel::ClosureHost::new().with_handler(|_, _| {
        Err(digipology_kernel::ScriptFailure {
            script_id: "rules".into(),
            binding_id: "global".into(),
            function: "on_any".into(),
            line: None,
            message: "fails on purpose".into(),
            kind: digipology_kernel::ScriptErrorKind::Runtime,
        })
    })
}
