//! The state hash kept up to date per action (docs/determinism.md, State
//! hash): a kernel that tracks digests agrees, after every action, with the
//! hash and digests the definition gives for the whole document; the
//! changes it reports after an action are exactly the leaves that differ;
//! and keeping it up to date costs what the action touched (counted in
//! leaves re-hashed, not timed).

mod common;

use std::collections::BTreeMap;

use common::*;
use digipology_kernel::{ClosureHost, Kernel, NoScripts, ScriptHost, Value as V};
use serde_json::{json, Value};

/// Checks the tracked kernel against the definition and the reported
/// changes against the difference of the whole digest maps.
fn check(k: &Kernel, before: &mut BTreeMap<String, String>, what: &str) {
    let (hash, now) = hash_by_definition(k.state());
    assert_eq!(k.state_hash(), hash, "{what}: tracked hash");
    assert_eq!(k.digest_map(), now, "{what}: tracked digests");
    let mut expected: BTreeMap<String, Option<String>> = BTreeMap::new();
    for (p, d) in &now {
        if before.get(p) != Some(d) {
            expected.insert(p.clone(), Some(d.clone()));
        }
    }
    for p in before.keys() {
        if !now.contains_key(p) {
            expected.insert(p.clone(), None);
        }
    }
    let reported: BTreeMap<String, Option<String>> =
        k.changes().iter().map(|c| (c.path(), c.hex())).collect();
    assert_eq!(reported, expected, "{what}: reported changes");
    *before = now;
}

/// A host whose handler writes a script's storage whenever a counter
/// changes, so storage leaves change too.
fn storage_host() -> ClosureHost {
    ClosureHost::new().with_handler_for(&["counter.changed"], |ctx, _| {
        let n = ctx.state().sequence;
        let root = ctx.storage_root_mut("main");
        if let V::Object(m) = root {
            m.insert(
                "last".into(),
                V::Number(f64::from(u32::try_from(n).unwrap_or(u32::MAX))),
            );
        }
        Ok(())
    })
}

#[test]
fn every_section_stays_in_step_with_the_definition() {
    let mut game = standard_game();
    game["prefabs"] = json!({"token": {"components": {"grabbable": {}}}});
    if let Some(list) = game["entities"].as_array_mut() {
        list.push(json!({"id": "x1", "components": {"grabbable": {}, "stackable": {}}}));
    }
    let state = digipology_kernel::state_from_game(&game, 7).expect("loads");
    let mut k = Kernel::new(state);
    k.track_digests();
    let mut before = hash_by_definition(k.state()).1;
    assert_eq!(k.digest_map(), before);
    let actions: Vec<Value> = vec![
        system(
            "system.game_start",
            json!({"settings": {"mode": "x", "b": 2}}),
        ),
        system(
            "system.player_joined",
            json!({"playerId": "p1", "name": "Ann"}),
        ),
        system("system.player_joined", json!({"playerId": "p2"})),
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 2}),
        ),
        player(
            "p1",
            "counter.add",
            json!({"entityId": "nope_counter", "amount": 1}),
        ),
        player("p1", "deck.shuffle", json!({"deckId": "deck"})),
        script(
            "prompt.create",
            json!({"id": "q1", "kind": "choice", "playerId": "p1", "title": "Pick", "choices": ["a", "b"], "default": "a"}),
        ),
        player(
            "p1",
            "prompt.respond",
            json!({"promptId": "q1", "response": "b"}),
        ),
        script(
            "timer.register",
            json!({"timerId": "t1", "delay": 5, "callback": "tick", "scriptId": "main", "bindingId": "global"}),
        ),
        script("timer.cancel", json!({"timerId": "t1"})),
        script(
            "stack.create",
            json!({"stackId": "s2", "items": ["card", "x1"]}),
        ),
        system(
            "entity.spawn",
            json!({"prefabId": "token", "transform": {"position": {"x": 1, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}}}),
        ),
        script("entity.destroy", json!({"entityId": "plain"})),
        player("p1", "entity.flip", json!({"entityId": "nope"})),
        system("system.player_left", json!({"playerId": "p2"})),
    ];
    let mut host = storage_host();
    for (i, a) in actions.iter().enumerate() {
        let out = k.process_json(a, &mut host as &mut dyn ScriptHost);
        check(&k, &mut before, &format!("step {i} ({})", a["type"]));
        // Two steps are refused on purpose: they name entities that do not
        // exist.
        let refused = a["payload"]["entityId"]
            .as_str()
            .is_some_and(|e| e.starts_with("nope"));
        assert_eq!(out.accepted(), !refused, "step {i}: {:?}", out.rejection());
        if refused {
            assert!(
                k.changes().is_empty(),
                "step {i}: a rejection changes nothing"
            );
        }
    }
    // Every kind of leaf was reported changed at least once.
    let state = k.state();
    assert!(state.storage().contains_key("main"), "storage was written");
    assert!(state.prompts.contains_key("q1"));
    assert!(state.stacks.contains_key("s2"));
}

#[test]
fn a_dry_run_and_a_rollback_leave_the_tracked_hash_as_it_was() {
    let mut k = table();
    k.track_digests();
    let hash = k.state_hash();
    let mut failing = failing_host();
    let add = player(
        "p1",
        "counter.add",
        json!({"entityId": "score", "amount": 1}),
    );
    let out = k.process_json(&add, &mut failing);
    assert!(!out.accepted());
    assert_eq!(k.state_hash(), hash);
    assert!(k.changes().is_empty());
    let action = digipology_kernel::Action::from_json(&add).expect("envelope");
    let out = k.dry_run(&action, &mut NoScripts);
    assert!(out.accepted());
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state_hash(), k.state().hash());
}

/// A refused try (`process_if_accepted`) keeps the last action's changes
/// and the tracked hash; an accepted one reports its own changes, as
/// processing it would.
#[test]
fn a_refused_try_keeps_the_last_actions_changes() {
    let mut k = table();
    k.track_digests();
    let add = player(
        "p1",
        "counter.add",
        json!({"entityId": "score", "amount": 1}),
    );
    assert!(k.process_json(&add, &mut NoScripts).accepted());
    let changed = k.changes().to_vec();
    assert!(!changed.is_empty());
    let hash = k.state_hash();
    let action = digipology_kernel::Action::from_json(&add).expect("envelope");
    assert!(k
        .process_if_accepted(&action, &mut failing_host())
        .is_none());
    assert_eq!(k.changes(), changed.as_slice());
    assert_eq!(k.state_hash(), hash);
    assert!(k.process_if_accepted(&action, &mut NoScripts).is_some());
    assert!(!k.changes().is_empty());
    assert_ne!(k.state_hash(), hash);
    assert_eq!(k.state_hash(), k.state().hash());
}

#[test]
fn every_example_stream_stays_in_step() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).expect("examples").flatten() {
        let dir = entry.path();
        let (Ok(text), Ok(actions)) = (
            std::fs::read_to_string(dir.join("game.json")),
            std::fs::read_to_string(dir.join("actions.jsonl")),
        ) else {
            continue;
        };
        let game: Value = serde_json::from_str(&text).expect("game.json");
        let mut k = Kernel::new(digipology_kernel::state_from_game(&game, 3).expect("loads"));
        k.track_digests();
        let mut before = k.digest_map();
        for (i, line) in actions.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            k.process_line(line, &mut NoScripts);
            check(
                &k,
                &mut before,
                &format!("{} line {}", dir.display(), i + 1),
            );
        }
        seen += 1;
    }
    assert!(seen >= 3, "only {seen} examples with actions");
}

#[test]
fn a_counter_add_rehashes_and_reports_one_leaf_whatever_the_table_size() {
    for n in [10usize, 5_000] {
        let entities: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("e{i:05}"), "components": {"counter": {}}}))
            .collect();
        let mut k = started(&json!({"entities": entities}), 1);
        k.track_digests();
        let out = k.process_json(
            &script("counter.add", json!({"entityId": "e00001", "amount": 1})),
            &mut NoScripts,
        );
        assert!(out.accepted(), "{:?}", out.rejection());
        assert_eq!(k.leaves_rehashed(), 1, "n = {n}: one leaf re-hashed");
        let paths: Vec<String> = k.changes().iter().map(|c| c.path()).collect();
        assert_eq!(paths, ["entities.e00001"], "n = {n}");
        assert_eq!(k.state_hash(), k.state().hash(), "n = {n}");
    }
}

/// An entity destroyed and another spawned under its id in one action: the
/// new one may take a slot before the old one's, and the change must still
/// be reported (what a record's `changed` and a replay's paths rest on).
#[test]
fn an_id_destroyed_and_spawned_again_in_one_action_is_reported_changed() {
    let game = json!({"entities": [{"id": "a"}, {"id": "b"}],
                      "prefabs": {"tok": {"components": {"grabbable": {}}}}});
    let mut k = started(&game, 1);
    k.track_digests();
    let mut before = k.digest_map();
    let spawn = json!({"type": "entity.spawn", "source": {"kind": "system"}, "actionId": "x",
                       "payload": {"prefabId": "tok", "props": {"v": 1}}});
    assert!(k.process_json(&spawn, &mut NoScripts).accepted());
    check(&k, &mut before, "spawn tok_x_1");
    // Free a low slot for the next spawn to take.
    let destroy_a = system("entity.destroy", json!({"entityId": "a"}));
    assert!(k.process_json(&destroy_a, &mut NoScripts).accepted());
    check(&k, &mut before, "destroy a");
    let mut respawn = ClosureHost::new().with_handler_for(&["entity.destroyed"], |ctx, _| {
        ctx.submit("main", "global", "entity.spawn", json!({"prefabId": "tok"}))
            .map_err(|r| digipology_kernel::ScriptFailure {
                script_id: "main".into(),
                binding_id: "global".into(),
                function: "on_entity_destroyed".into(),
                line: None,
                message: r.message,
                kind: digipology_kernel::ScriptErrorKind::Subcommand,
            })
    });
    let destroy = json!({"type": "entity.destroy", "source": {"kind": "system"}, "actionId": "x",
                         "payload": {"entityId": "tok_x_1"}});
    let out = k.process_json(&destroy, &mut respawn);
    assert!(out.accepted(), "{:?}", out.rejection());
    assert!(k.state().entity("tok_x_1").is_some(), "spawned again");
    check(&k, &mut before, "destroy tok_x_1 and spawn it again");
    assert_eq!(
        k.changes().iter().map(|c| c.path()).collect::<Vec<_>>(),
        ["entities.tok_x_1"]
    );
    // A dry run afterwards leaves the last action's changes as they were.
    let probe =
        digipology_kernel::Action::from_json(&system("entity.destroy", json!({"entityId": "b"})))
            .expect("envelope");
    assert!(k.dry_run(&probe, &mut NoScripts).accepted());
    assert_eq!(k.changes().len(), 1);
}
