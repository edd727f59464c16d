//! Helpers: a room with Lua scripts over a small table.
#![allow(dead_code)]

use digipology_kernel::{state_from_game, Kernel, Outcome};
use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
use serde_json::{json, Value};

/// A script for a test room: (id, source, bindings as (id, entity)).
pub type Script<'a> = (&'a str, &'a str, &'a [(&'a str, Option<&'a str>)]);

/// The test table: a few cards, a deck, a die, counters, a button, a text.
pub fn game() -> Value {
    json!({
        "seats": ["north", "south"],
        "settings": {"rounds": 3, "mode": "test"},
        "entities": [
            {"id": "card", "tags": ["card", "red"], "props": {"rank": 7}, "components": {"grabbable": {}, "flippable": {}, "stackable": {}, "transform": {"position": {"x": 1, "y": 0, "z": 0}}}},
            {"id": "card2", "tags": ["card"], "components": {"grabbable": {}, "flippable": {}, "stackable": {}, "transform": {"position": {"x": 2, "y": 0, "z": 0}}}},
            {"id": "c1", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "c2", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "c3", "components": {"grabbable": {}, "flippable": {}}},
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["c1", "c2", "c3"]}}},
            {"id": "hand", "components": {"container": {}}},
            {"id": "d6", "components": {"die": {}, "grabbable": {}}},
            {"id": "score", "components": {"counter": {"value": 0, "min": 0, "max": 100}}},
            {"id": "other", "components": {"counter": {}}},
            {"id": "btn", "components": {"button": {}}},
            {"id": "btn2", "components": {"button": {}}},
            {"id": "sign", "components": {"text": {"value": "hello"}}},
            {"id": "lockbox", "components": {"lockable": {}, "grabbable": {}}},
            {"id": "slot", "components": {"snap_point": {}, "transform": {"position": {"x": 50, "y": 0, "z": 0}}}},
            {"id": "s_a", "components": {"stackable": {}, "transform": {"position": {"x": 9, "y": 0, "z": 9}}}},
            {"id": "s_b", "components": {"stackable": {}, "transform": {"position": {"x": 9, "y": 0, "z": 9}}}},
            {"id": "hand_p2", "tags": ["hand"], "props": {"owner": "p2"}, "components": {"container": {}}}
        ],
        "prefabs": {"token": {"tags": ["token"], "props": {"color": "red"}, "components": {"grabbable": {}, "flippable": {}}}}
    })
}

/// A room running `scripts` (id, source, bindings) with default limits.
pub fn room(scripts: &[Script<'_>]) -> (Kernel, LuaHost) {
    room_with(scripts, Limits::default())
}

/// As [`room`], with limits.
pub fn room_with(scripts: &[Script<'_>], limits: Limits) -> (Kernel, LuaHost) {
    try_room(scripts, limits).unwrap_or_else(|e| panic!("scripts load: {e}"))
}

/// Builds a room, or the load error.
pub fn try_room(
    scripts: &[Script<'_>],
    limits: Limits,
) -> Result<(Kernel, LuaHost), digipology_lua::LoadError> {
    let state = state_from_game(&game(), 5).expect("game loads");
    let specs: Vec<ScriptSpec> = scripts
        .iter()
        .map(|(id, src, bindings)| ScriptSpec {
            id: (*id).into(),
            file: format!("scripts/{id}.lua"),
            source: (*src).into(),
            bindings: bindings
                .iter()
                .map(|(b, e)| BindingSpec {
                    id: (*b).into(),
                    entity: e.map(str::to_owned),
                })
                .collect(),
        })
        .collect();
    let host = LuaHost::new(&specs, Modules::new(), &state, limits)?;
    Ok((Kernel::new(state), host))
}

/// A script bound once, globally.
pub fn global(src: &str) -> (Kernel, LuaHost) {
    room(&[("main", src, &[("global", None)])])
}

/// Starts the game and joins p1, p2.
pub fn start(k: &mut Kernel, host: &mut LuaHost) -> Vec<Outcome> {
    [
        json!({"type": "system.game_start", "source": {"kind": "system"}, "payload": {}}),
        json!({"type": "system.player_joined", "source": {"kind": "system"}, "payload": {"playerId": "p1", "name": "Ann"}}),
        json!({"type": "system.player_joined", "source": {"kind": "system"}, "payload": {"playerId": "p2"}}),
    ]
    .iter()
    .map(|a| k.process_json(a, host))
    .collect()
}

/// A player action.
pub fn player(p: &str, ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "player", "playerId": p}, "payload": payload})
}

/// (type, data) of each event. Every line is also checked against the
/// slow, obvious construction: the event's data built as a value and
/// written canonically must be exactly what the line holds.
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
            let line: Value = serde_json::from_str(&text).expect("event JSON");
            (e.type_name().to_owned(), line["data"].clone())
        })
        .collect()
}

/// The canonical JSON of one entity component.
pub fn component(k: &Kernel, entity: &str, name: &str) -> Value {
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state JSON");
    doc["entities"][entity]["components"][name].clone()
}

/// The canonical storage of a script.
pub fn storage(k: &Kernel, script: &str) -> Value {
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state JSON");
    doc["storage"][script].clone()
}

/// Asserts the action failed as a script error of `kind`, changed nothing,
/// advanced the sequence, and returns the script.error data.
pub fn script_error(k: &mut Kernel, host: &mut LuaHost, action: Value, kind: &str) -> Value {
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let out = k.process_json(&action, host);
    let ev = events(&out);
    assert_eq!(
        ev.len(),
        2,
        "expected action.rejected + script.error, got {ev:?}"
    );
    assert_eq!(ev[0].1["code"], json!("script_error"), "{ev:?}");
    assert_eq!(ev[1].0, "script.error");
    assert_eq!(ev[1].1["kind"], json!(kind), "{ev:?}");
    assert_eq!(k.state_hash(), hash, "a failed action changed the state");
    assert_eq!(k.state().sequence, seq + 1);
    ev[1].1.clone()
}

/// A started room running `src` in one global binding, after p1 pressed
/// `btn` and the press failed as a script error of `kind`
/// ([`script_error`]'s checks): the room and the `script.error` data.
pub fn press_fails(src: &str, kind: &str) -> (Kernel, LuaHost, Value) {
    let (mut k, mut host) = global(src);
    start(&mut k, &mut host);
    let err = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn"})),
        kind,
    );
    (k, host, err)
}

/// Asserts the room still serves: a button press is accepted.
pub fn still_serving(k: &mut Kernel, host: &mut LuaHost) {
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn2"})),
        host,
    );
    assert!(out.accepted(), "room no longer serves: {:?}", events(&out));
}
