//! Must show (issue 36, finding 3): everything a game holds outside the
//! VM counts against one byte budget per room (docs/lua-api.md, The byte
//! budget): storage, prompts, spawned entities' props, timer data, the
//! answers of its view and match functions. Reaching it is a clean
//! `memory` script error that changes nothing; the room goes on; what the
//! room holds stays within the budget; and the total the room keeps up to
//! date is, after every action, what the state measures afresh.

mod common;

use std::path::{Path, PathBuf};

use common::scratch;
use digipology_kernel::Viewer;
use digipology_room::{package, Package, Room};
use serde_json::{json, Value};

/// A two-seat match game with buttons that hoard, `limits.bytesMax` as
/// given (none: the default).
fn game(dir: &Path, id: &str, bytes_max: Option<u64>, script: &str) -> PathBuf {
    let game = dir.join(id);
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let button = |id: &str| json!({"id": id, "components": {"button": {}}});
    let mut manifest = json!({
        "id": id, "name": id, "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "limits": {"instructionsMax": 100_000_000},
        "entities": [button("many"), button("one"), button("prompt"), button("spawn"),
                     button("timer"), button("shared"), button("free"), button("text"),
                     {"id": "sign", "components": {"text": {}}},
                     {"id": "hand", "components": {"container": {}}}],
        "prefabs": {"token": {"components": {"grabbable": {}}}},
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null}}
    });
    if let Some(n) = bytes_max {
        manifest["limits"]["bytesMax"] = json!(n);
    }
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(game.join("scripts/main.lua"), script).expect("main.lua");
    game
}

const HOARD: &str = "local mb = string.rep('x', 1000000)\n\
    function on_button_pressed(e)\n\
      local id = e.data.entityId\n\
      if id == 'many' then for i = 1, 1000 do storage['k' .. i] = mb end\n\
      elseif id == 'one' then storage.n = (storage.n or 0) + 1; storage['one' .. storage.n] = mb\n\
      elseif id == 'prompt' then for i = 1, 1000 do ui:prompt('p1', mb, {'a'}) end\n\
      elseif id == 'spawn' then for i = 1, 1000 do game.spawn('token', {props = {x = mb}}) end\n\
      elseif id == 'timer' then for i = 1, 1000 do timer.after(1000000, 'noop', mb) end\n\
      elseif id == 'shared' then\n\
        local t = {} for i = 1, 1000000 do t[i] = mb end\n\
        storage.shared = t\n\
      elseif id == 'free' then\n\
        for k in pairs(storage) do storage[k] = nil end\n\
      elseif id == 'text' then\n\
        for i = 1, 100 do game.entity('sign'):set_text(string.rep('y', 4000)) end\n\
      end\n\
    end\n\
    function noop() end\n\
    function legal_actions(seat)\n\
      local t = {} for i = 1, 100 do t[i] = {type = 'button.press', payload = {entityId = mb}} end\n\
      return t\n\
    end\n";

fn started(game: &Path) -> Room {
    let package = Package::load(game).expect("game loads");
    let mut room = package::build_room(&package, 3, (None, None)).expect("room");
    room.keep_events();
    let mut sink = Vec::new();
    room.start(&mut sink).expect("start");
    room.seat_players(&["p1".into(), "p2".into()], &package.seats(), &mut sink)
        .expect("seat");
    room.take_events();
    room
}

/// Presses `button` as p1: (accepted, the script error's kind and
/// message if there was one).
fn press(room: &mut Room, button: &str) -> (bool, Option<(String, String)>) {
    let action = json!({"type": "button.press", "source": {"kind": "player", "playerId": "p1"},
                        "payload": {"entityId": button}});
    let hash = room.kernel().state_hash();
    let seq = room.kernel().state().sequence;
    let mut out = Vec::new();
    room.submit_json(action, &mut out).expect("submit");
    let lines: Vec<Value> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let rejected = lines.iter().any(|e| e["type"] == "action.rejected");
    let error = lines.iter().find(|e| e["type"] == "script.error").map(|e| {
        (
            e["data"]["kind"].as_str().unwrap_or("").to_owned(),
            e["data"]["message"].as_str().unwrap_or("").to_owned(),
        )
    });
    if rejected {
        assert_eq!(
            room.kernel().state_hash(),
            hash,
            "{button}: a refusal changed the state"
        );
    }
    assert_eq!(room.kernel().state().sequence, seq + 1);
    // Kept up to date action by action, and exactly what a fresh count
    // says.
    let state = room.kernel().state();
    assert_eq!(
        state.held_bytes(),
        state.measure_held(),
        "{button}: held bytes"
    );
    (!rejected, error)
}

fn refused_for_bytes(room: &mut Room, button: &str) {
    let (accepted, error) = press(room, button);
    assert!(!accepted, "{button} was accepted");
    let (kind, message) = error.unwrap_or_default();
    assert_eq!(kind, "memory", "{button}: {message}");
    assert!(
        message.contains("limits.bytesMax"),
        "{button}: the message names the setting: {message}"
    );
}

#[test]
fn hoarding_in_one_action_is_refused_wherever_the_bytes_would_go() {
    let dir = scratch("bytes-one-action");
    let mut room = started(&game(&dir, "hoard", None, HOARD));
    for button in ["many", "prompt", "spawn", "timer", "shared"] {
        refused_for_bytes(&mut room, button);
        assert!(room.kernel().state().held_bytes() < 1_000_000);
    }
    // The room goes on.
    assert!(press(&mut room, "one").0);
}

#[test]
fn hoarding_across_actions_stops_at_the_budget_and_frees_again() {
    let dir = scratch("bytes-across");
    let budget = 8_000_000;
    let mut room = started(&game(&dir, "hoard", Some(budget), HOARD));
    let mut kept = 0;
    for _ in 0..12 {
        let (accepted, error) = press(&mut room, "one");
        if accepted {
            kept += 1;
        } else {
            let (kind, _) = error.unwrap_or_default();
            assert_eq!(kind, "memory");
        }
        assert!(room.kernel().state().held_bytes() <= budget);
    }
    assert_eq!(kept, 7, "a megabyte a press, under eight");
    // Freeing makes room again.
    assert!(press(&mut room, "free").0);
    assert!(press(&mut room, "one").0);
    // Text within its own limit is fine; a hundred texts replace each
    // other.
    assert!(press(&mut room, "text").0);
}

#[test]
fn a_game_functions_answer_may_not_exceed_the_budget() {
    let dir = scratch("bytes-answer");
    let mut room = started(&game(&dir, "hoard", None, HOARD));
    // legal_actions answers a hundred megabytes: refused as an answer (a
    // fault the room reports), the observation still comes, nothing held.
    let o = room.observation_at(&Viewer::Seat("a".into()), 0);
    assert!(o.get("seq").is_some(), "{o}");
    let held = room.kernel().state().held_bytes();
    assert!(held < 1_000_000, "{held}");
    let faults = room.take_faults();
    assert!(
        faults.iter().any(|f| f.contains("limits.bytesMax")),
        "{faults:?}"
    );
}

#[test]
fn a_table_that_starts_over_its_budget_is_refused_with_the_field() {
    let dir = scratch("bytes-start");
    let g = game(&dir, "tight", Some(64 * 1024), "");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(g.join("game.json")).expect("read"))
            .expect("json");
    let props: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("p{i}"), json!("z".repeat(1000))))
        .collect();
    manifest["entities"]
        .as_array_mut()
        .expect("entities")
        .push(json!({"id": "heavy", "props": props}));
    std::fs::write(g.join("game.json"), manifest.to_string()).expect("write");
    let package = Package::load(&g).expect("loads");
    let err = package::build_room(&package, 0, (None, None))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("limits.bytesMax"), "{err}");
}
