//! Conformance: system.player_disconnected, system.player_removed,
//! entity.spawn, entity.destroy, deck.draw_to_world, deck.deal,
//! die.set_value.

mod common;

use common::*;
use digipology_kernel::{ClosureHost, Kernel, ScriptErrorKind, ScriptFailure};
use serde_json::{json, Value};

fn game() -> Value {
    let mut g = standard_game();
    let list = g["entities"].as_array_mut().expect("entities");
    list.push(json!({"id": "hand_p1", "tags": ["hand"], "props": {"owner": "p1"}, "components": {"container": {}}}));
    list.push(json!({"id": "hand_p2", "tags": ["hand"], "props": {"owner": "p2"}, "components": {"container": {"capacity": 1}}}));
    list.push(json!({"id": "zone", "components": {"transform": {"position": {"x": 50, "y": 0, "z": 0}}, "zone": {"halfExtents": {"x": 5, "y": 1, "z": 5}}}}));
    list.push(json!({"id": "slot", "components": {"transform": {"position": {"x": 90, "y": 0, "z": 0}}, "snap_point": {"attached": ["card"]}}}));
    list.push(json!({"id": "box", "components": {"container": {"items": ["plain"]}}}));
    g["prefabs"] = json!({"token": {"tags": ["token"], "props": {"color": "red", "size": 1}, "components": {"grabbable": {}, "stackable": {}}}});
    g
}

fn room() -> Kernel {
    let mut k = started(&game(), 1);
    for a in [
        system("system.player_joined", json!({"playerId": "p1"})),
        system("system.player_joined", json!({"playerId": "p2"})),
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
    ] {
        accept(&mut k, a);
    }
    k
}

fn doc(k: &Kernel) -> Value {
    serde_json::from_str(&k.state().canonical_json()).expect("state")
}

fn at(x: f64) -> Value {
    json!({"position": {"x": x, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}})
}

#[test]
fn disconnect_releases_holds_and_keeps_the_player_and_seats() {
    let mut k = room();
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "d6"})),
    );
    let ev = accept(
        &mut k,
        system("system.player_disconnected", json!({"playerId": "p1"})),
    );
    assert_eq!(
        ev,
        vec![
            (
                "entity.dropped".into(),
                json!({"entityId": "d6", "playerId": "p1"})
            ),
            ("player.disconnected".into(), json!({"playerId": "p1"})),
        ]
    );
    assert_eq!(doc(&k)["seats"]["north"], json!("p1"));
    assert!(k.state().players.contains_key("p1"));
    reject(
        &mut k,
        script("system.player_disconnected", json!({"playerId": "p1"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("system.player_disconnected", json!({"playerId": "ghost"})),
        "player_not_found",
    );
    reject(
        &mut k,
        system(
            "system.player_disconnected",
            json!({"playerId": "p1", "grace": 5}),
        ),
        "unknown_key",
    );
}

#[test]
fn removal_releases_clears_seats_and_deletes_the_player() {
    let mut k = room();
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "c1"})),
    );
    let ev = accept(
        &mut k,
        system("system.player_removed", json!({"playerId": "p1"})),
    );
    let types: Vec<&str> = ev.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, vec!["entity.dropped", "seat.left", "player.removed"]);
    assert!(!k.state().players.contains_key("p1"));
    reject(
        &mut k,
        system("system.player_removed", json!({"playerId": "p1"})),
        "player_not_found",
    );
}

#[test]
fn spawn_creates_a_prefab_instance_with_a_derived_id() {
    let mut k = room();
    let out = k.process_json(
        &json!({"type": "entity.spawn", "actionId": "s9", "source": {"kind": "system"},
                "payload": {"prefabId": "token", "transform": at(50.0), "props": {"size": 3}}}),
        &mut digipology_kernel::NoScripts,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    // Id = <prefabId>_<actionId>_<spawn index>.
    assert_eq!(
        events(&out),
        vec![
            (
                "entity.spawned".into(),
                json!({"entityId": "token_s9_1", "prefabId": "token"})
            ),
            (
                "zone.entered".into(),
                json!({"zoneId": "zone", "entityId": "token_s9_1"})
            ),
        ]
    );
    let e = &doc(&k)["entities"]["token_s9_1"];
    assert_eq!(e["props"], json!({"color": "red", "size": 3}));
    assert_eq!(e["tags"], json!(["token"]));
    assert_eq!(e["components"]["grabbable"], json!({"enabled": true}));
    k.state().check_invariants().expect("invariants");
}

#[test]
fn several_spawns_in_one_action_count_up_and_clashes_take_a_suffix() {
    let mut host = ClosureHost::new().with_handler(|ctx, e| {
        if e.type_name() == "button.pressed" {
            for _ in 0..2 {
                let _ = ctx.submit(
                    "main",
                    "global",
                    "entity.spawn",
                    json!({"prefabId": "token"}),
                );
            }
        }
        Ok(())
    });
    let mut k = room();
    let seq = k.state().sequence;
    let ev = accept_with(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    let spawned: Vec<Value> = ev
        .iter()
        .filter(|(t, _)| t == "entity.spawned")
        .map(|(_, d)| d["entityId"].clone())
        .collect();
    assert_eq!(
        spawned,
        vec![
            json!(format!("token_a{seq}_1")),
            json!(format!("token_a{seq}_2"))
        ]
    );
    // A given action id that repeats: the derived id is taken, so _1 is added.
    let spawn = |id: &str| json!({"type": "entity.spawn", "actionId": id, "source": {"kind": "system"}, "payload": {"prefabId": "token"}});
    accept(&mut k, spawn("same"));
    let ev = accept(&mut k, spawn("same"));
    assert_eq!(ev[0].1["entityId"], json!("token_same_1_1"));
}

#[test]
fn spawn_rejections() {
    let mut k = room();
    // "player only in a permitted sandbox"
    reject(
        &mut k,
        player("p1", "entity.spawn", json!({"prefabId": "token"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system(
            "entity.spawn",
            json!({"prefabId": "token", "color": "blue"}),
        ),
        "unknown_key",
    );
    reject(&mut k, system("entity.spawn", json!({})), "missing_field");
    reject(
        &mut k,
        system("entity.spawn", json!({"prefabId": "dragon"})),
        "prefab_not_found",
    );
    reject(
        &mut k,
        system("entity.spawn", json!({"prefabId": "token", "props": [1]})),
        "invalid_type",
    );
    reject(
        &mut k,
        system(
            "entity.spawn",
            json!({"prefabId": "token", "transform": at(2_000_000.0)}),
        ),
        "invalid_value",
    );
    let mut g = game();
    g["settings"] = json!({"sandbox": true});
    let mut k = started(&g, 1);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    accept(
        &mut k,
        player("p1", "entity.spawn", json!({"prefabId": "token"})),
    );
}

#[test]
fn destroy_cleans_every_membership_and_reference() {
    let mut k = room();
    // Held, in a container, in a stack below its top, on a snap point, in a zone.
    accept(
        &mut k,
        system(
            "entity.spawn",
            json!({"prefabId": "token", "transform": at(50.0)}),
        ),
    );
    let token = doc(&k)["entities"]
        .as_object()
        .and_then(|m| m.keys().find(|k| k.starts_with("token")).cloned())
        .expect("token");
    accept(
        &mut k,
        player("p2", "entity.grab", json!({"entityId": token})),
    );
    let ev = accept(&mut k, system("entity.destroy", json!({"entityId": token})));
    assert_eq!(
        ev,
        vec![
            (
                "entity.dropped".into(),
                json!({"entityId": token, "playerId": "p2"})
            ),
            (
                "zone.left".into(),
                json!({"zoneId": "zone", "entityId": token})
            ),
            ("entity.destroyed".into(), json!({"entityId": token})),
        ]
    );
    assert!(doc(&k)["entities"].get(&token).is_none());
    let ev = accept(
        &mut k,
        script("entity.destroy", json!({"entityId": "s_bottom"})),
    );
    assert_eq!(
        ev[0],
        (
            "stack.changed".into(),
            json!({"stackId": "s1", "items": ["s_top"]})
        )
    );
    let ev = accept(
        &mut k,
        script("entity.destroy", json!({"entityId": "card"})),
    );
    assert_eq!(
        ev[0],
        (
            "snap.detached".into(),
            json!({"snapPointId": "slot", "entityId": "card"})
        )
    );
    // A destroyed container's items go to the world.
    let ev = accept(&mut k, script("entity.destroy", json!({"entityId": "box"})));
    assert_eq!(
        ev[0],
        (
            "container.removed".into(),
            json!({"containerId": "box", "entityId": "plain", "index": 0})
        )
    );
    assert_eq!(
        k.state().entity("plain").map(|e| e.placement.clone()),
        Some(digipology_kernel::state::Placement::World)
    );
    k.state().check_invariants().expect("invariants");
    // Ids are never reused: the id is gone and stays gone.
    reject(
        &mut k,
        script("entity.destroy", json!({"entityId": "card"})),
        "entity_not_found",
    );
    reject(
        &mut k,
        player("p1", "entity.destroy", json!({"entityId": "c1"})),
        "source_not_allowed",
    );
}

#[test]
fn a_rolled_back_destroy_puts_everything_back() {
    let mut host = ClosureHost::new().with_handler(|ctx, e| {
        if e.type_name() == "button.pressed" {
            let _ = ctx.submit(
                "main",
                "global",
                "counter.add",
                json!({"entityId": "score", "amount": 3}),
            );
            let _ = ctx.submit(
                "main",
                "global",
                "entity.destroy",
                json!({"entityId": "score"}),
            );
            let _ = ctx.submit(
                "main",
                "global",
                "entity.destroy",
                json!({"entityId": "s_top"}),
            );
            return Err(ScriptFailure {
                script_id: "main".into(),
                binding_id: "global".into(),
                function: "on_button_pressed".into(),
                line: None,
                message: "undo it all".into(),
                kind: ScriptErrorKind::Runtime,
            });
        }
        Ok(())
    });
    let mut k = room();
    let before = k.state().canonical_json();
    let hash = k.state_hash();
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(!out.accepted());
    assert_eq!(k.state_hash(), hash);
    let after = k.state().canonical_json();
    assert_eq!(after.replace("\"sequence\":5", "\"sequence\":4"), before);
    k.state()
        .check_invariants()
        .expect("invariants after rollback");
    // The restored counter still works.
    accept(
        &mut k,
        player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 1}),
        ),
    );
}

#[test]
fn draw_to_world_takes_the_top_card() {
    let mut k = room();
    let ev = accept(
        &mut k,
        player(
            "p1",
            "deck.draw_to_world",
            json!({"deckId": "deck", "transform": at(50.0)}),
        ),
    );
    assert_eq!(
        ev,
        vec![
            (
                "deck.drawn".into(),
                json!({"deckId": "deck", "target": null, "entityIds": ["c3"]})
            ),
            (
                "zone.entered".into(),
                json!({"zoneId": "zone", "entityId": "c3"})
            ),
        ]
    );
    assert_eq!(
        doc(&k)["entities"]["c3"]["components"]["transform"],
        at(50.0).tap_int()
    );
    accept(
        &mut k,
        script("deck.draw_to_world", json!({"deckId": "deck"})),
    );
    accept(
        &mut k,
        script("deck.draw_to_world", json!({"deckId": "deck"})),
    );
    reject(
        &mut k,
        script("deck.draw_to_world", json!({"deckId": "deck"})),
        "insufficient_cards",
    );
    reject(
        &mut k,
        system("deck.draw_to_world", json!({"deckId": "deck"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script("deck.draw_to_world", json!({"deckId": "hand"})),
        "missing_component",
    );
    k.state().check_invariants().expect("invariants");
}

trait TapInt {
    fn tap_int(self) -> Value;
}

impl TapInt for Value {
    /// Whole numbers as the canonical form writes them.
    fn tap_int(self) -> Value {
        match self {
            Value::Number(n) => match n.as_f64() {
                // Test data: small integers, exact.
                #[allow(clippy::cast_possible_truncation)]
                Some(f) if f.fract() == 0.0 => json!(f as i64),
                _ => Value::Number(n),
            },
            Value::Object(m) => {
                Value::Object(m.into_iter().map(|(k, v)| (k, v.tap_int())).collect())
            }
            other => other,
        }
    }
}

#[test]
fn deal_is_round_robin_in_target_order_and_all_or_nothing() {
    let mut k = room();
    let ev = accept(
        &mut k,
        player(
            "p1",
            "deck.deal",
            json!({"deckId": "deck", "targets": ["hand", "p1"], "cardsEach": 1}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "deck.dealt".into(),
            json!({"deckId": "deck", "cardsEach": 1, "targets": ["hand", "hand_p1"], "entityIds": ["c3", "c2"]})
        )]
    );
    assert_eq!(
        doc(&k)["entities"]["hand"]["components"]["container"]["items"],
        json!(["c3"])
    );
    assert_eq!(
        doc(&k)["entities"]["hand_p1"]["components"]["container"]["items"],
        json!(["c2"])
    );
    // One card left: a deal of two rejects and deals nothing.
    let hash = k.state_hash();
    reject(
        &mut k,
        script(
            "deck.deal",
            json!({"deckId": "deck", "targets": ["hand", "p1"], "cardsEach": 1}),
        ),
        "insufficient_cards",
    );
    assert_eq!(k.state_hash(), hash);
    k.state().check_invariants().expect("invariants");
}

#[test]
fn deal_rejections() {
    let mut k = room();
    let deal = |targets: Value, each: Value| {
        script(
            "deck.deal",
            json!({"deckId": "deck", "targets": targets, "cardsEach": each}),
        )
    };
    reject(
        &mut k,
        system(
            "deck.deal",
            json!({"deckId": "deck", "targets": ["hand"], "cardsEach": 1}),
        ),
        "source_not_allowed",
    );
    reject(&mut k, deal(json!([]), json!(1)), "invalid_value");
    reject(&mut k, deal(json!(["hand"]), json!(0)), "invalid_value");
    reject(&mut k, deal(json!("hand"), json!(1)), "invalid_type");
    reject(
        &mut k,
        deal(json!(["nowhere"]), json!(1)),
        "entity_not_found",
    );
    reject(&mut k, deal(json!(["card"]), json!(1)), "missing_component");
    reject(&mut k, deal(json!(["deck"]), json!(1)), "same_container");
    // p2's hand holds one card: two do not fit.
    reject(&mut k, deal(json!(["p2"]), json!(2)), "capacity_exceeded");
    let mut g = game();
    g["entities"]
        .as_array_mut()
        .expect("e")
        .retain(|e| e["id"] != "hand_p2");
    let mut k = started(&g, 1);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p2"})),
    );
    reject(&mut k, deal(json!(["p2"]), json!(1)), "no_hand");
}

#[test]
fn set_value_accepts_only_a_face() {
    let mut k = room();
    let ev = accept(
        &mut k,
        script(
            "die.set_value",
            json!({"entityId": "coin", "value": "tails"}),
        ),
    );
    assert!(ev.is_empty());
    assert_eq!(
        doc(&k)["entities"]["coin"]["components"]["die"]["value"],
        json!("tails")
    );
    accept(
        &mut k,
        script("die.set_value", json!({"entityId": "d6", "value": 4})),
    );
    reject(
        &mut k,
        script("die.set_value", json!({"entityId": "d6", "value": 7})),
        "invalid_value",
    );
    reject(
        &mut k,
        script("die.set_value", json!({"entityId": "d6", "value": "4"})),
        "invalid_value",
    );
    reject(
        &mut k,
        player("p1", "die.set_value", json!({"entityId": "d6", "value": 4})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script("die.set_value", json!({"entityId": "card", "value": 4})),
        "missing_component",
    );
    reject(
        &mut k,
        script("die.set_value", json!({"entityId": "d6"})),
        "missing_field",
    );
}
