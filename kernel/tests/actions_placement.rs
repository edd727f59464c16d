//! Conformance: entity.drop, entity.move, container.move,
//! container.reorder, stack.*, snap.attach and zone recomputation (registry "Entity actions",
//! "Container, deck, and stack actions", "snap.attach", derived events).

mod common;

use common::*;
use digipology_kernel::{ClosureHost, GuardKind, Kernel, Verdict};
use serde_json::{json, Value};

/// A JSON number as the canonical form writes it (integers without `.0`).
// Test data below 1e15: the cast is exact.
#[allow(clippy::cast_possible_truncation)]
fn n(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

fn at(x: f64, y: f64, z: f64) -> Value {
    json!({"position": {"x": n(x), "y": n(y), "z": n(z)}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}})
}

fn pos(x: f64, z: f64) -> Value {
    json!({"position": {"x": x, "y": 0, "z": z}})
}

fn card(id: &str, x: f64, z: f64) -> Value {
    json!({"id": id, "components": {"transform": pos(x, z), "grabbable": {}, "stackable": {}}})
}

fn snap(id: &str, x: f64, z: f64, extra: Value) -> Value {
    let mut sp = json!({"radius": 2});
    if let (Some(o), Some(e)) = (sp.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    json!({"id": id, "components": {"transform": pos(x, z), "snap_point": sp}})
}

/// The placement table. Zones z1 around the origin and z2 around x=100.
fn placement_game() -> Value {
    json!({
        "seats": ["north"],
        "entities": [
            card("a", 0.0, 0.0), card("b", 1.0, 0.0), card("c", 10.0, 0.0), card("d", 2.0, 0.0),
            card("e", 60.0, 0.0), card("x1", 50.0, 0.0), card("x2", 50.0, 0.0), card("loose", 70.0, 0.0),
            card("occupant", 40.0, 0.0), card("in_hand", 0.0, 0.0), card("plain_card", -80.0, 0.0),
            {"id": "red_card", "tags": ["red"], "components": {"transform": pos(-1.0, 0.0), "grabbable": {}, "stackable": {}}},
            {"id": "nostack", "components": {"transform": pos(-2.0, 0.0), "grabbable": {}}},
            {"id": "no_transform", "components": {"grabbable": {}}},
            snap("s1", 10.0, 0.0, json!({"capacity": 1})),
            snap("s2", 14.0, 0.0, json!({})),
            snap("s_red", 20.0, 0.0, json!({"tags": ["red", "blue"], "radius": 1})),
            snap("sa", 30.0, -1.0, json!({})),
            snap("sb", 30.0, 1.0, json!({})),
            snap("s_full", 40.0, 0.0, json!({"capacity": 1, "attached": ["occupant"]})),
            snap("s_far", 40.0, 1.5, json!({})),
            {"id": "z1", "components": {"transform": pos(0.0, 0.0), "zone": {"halfExtents": {"x": 5, "y": 1, "z": 5}}}},
            {"id": "z2", "components": {"transform": pos(100.0, 0.0), "zone": {"halfExtents": {"x": 5, "y": 1, "z": 5}}}},
            {"id": "hand", "components": {"container": {"items": ["in_hand"]}}},
            {"id": "bag", "components": {"container": {"capacity": 1}}},
            {"id": "box", "components": {"container": {}, "transform": pos(0.0, 0.0)}}
        ],
        "stacks": {"st1": {"items": ["x1", "x2"]}}
    })
}

fn room() -> Kernel {
    let mut k = started(&placement_game(), 1);
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p2"})),
    );
    k
}

fn grab(k: &mut Kernel, id: &str) {
    accept(k, player("p1", "entity.grab", json!({"entityId": id})));
}

fn drop_at(id: &str, x: f64, z: f64) -> Value {
    player(
        "p1",
        "entity.drop",
        json!({"entityId": id, "transform": at(x, 0.0, z)}),
    )
}

fn members(k: &Kernel, zone: &str) -> Value {
    component(k, zone, "zone")["members"].clone()
}

fn state_json(k: &Kernel) -> Value {
    serde_json::from_str(&k.state().canonical_json()).expect("state JSON")
}

fn invariants(k: &Kernel) {
    k.state()
        .check_invariants()
        .expect("placement invariants hold");
}

#[test]
fn zones_start_with_their_members_computed() {
    let k = room();
    // a, b, d and red_card, nostack and the box lie within z1; in_hand is in a
    // container and no_transform has no position; zones are never members.
    assert_eq!(
        members(&k, "z1"),
        json!(["a", "b", "box", "d", "nostack", "red_card"])
    );
    assert_eq!(members(&k, "z2"), json!([]));
    invariants(&k);
}

#[test]
fn drop_into_the_world_recomputes_zones_then_releases() {
    let mut k = room();
    grab(&mut k, "a");
    let ev = accept(&mut k, drop_at("a", 100.0, 0.0));
    assert_eq!(
        ev,
        vec![
            ("zone.left".into(), json!({"zoneId": "z1", "entityId": "a"})),
            (
                "zone.entered".into(),
                json!({"zoneId": "z2", "entityId": "a"})
            ),
            (
                "entity.dropped".into(),
                json!({"entityId": "a", "playerId": "p1"})
            ),
        ]
    );
    let s = state_json(&k);
    assert_eq!(s["entities"]["a"]["heldBy"], json!(null));
    assert_eq!(
        s["entities"]["a"]["components"]["transform"],
        at(100.0, 0.0, 0.0)
    );
    invariants(&k);
}

#[test]
fn drop_canonicalizes_the_transform() {
    let mut k = room();
    grab(&mut k, "a");
    let t = json!({"position": {"x": 80.123456, "y": -0.00001, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1.0005}, "scale": {"x": 1, "y": 1, "z": 1}});
    accept(
        &mut k,
        player(
            "p1",
            "entity.drop",
            json!({"entityId": "a", "transform": t}),
        ),
    );
    let got = component(&k, "a", "transform");
    assert_eq!(got["position"], json!({"x": 80.1235, "y": 0, "z": 0}));
    assert_eq!(got["rotation"]["w"], json!(1));
}

#[test]
fn drop_rejections() {
    let mut k = room();
    // Allowed source: player.
    reject(
        &mut k,
        script(
            "entity.drop",
            json!({"entityId": "a", "transform": at(0.0, 0.0, 0.0)}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player(
            "p1",
            "entity.drop",
            json!({"entityId": "a", "transform": at(0.0, 0.0, 0.0), "x": 1}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        player("p1", "entity.drop", json!({"entityId": "a"})),
        "missing_field",
    );
    // Transform checks: bounds, positive scale, normalized quaternion.
    for bad in [
        at(1_000_001.0, 0.0, 0.0),
        json!({"position": {"x": 0, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 2}, "scale": {"x": 1, "y": 1, "z": 1}}),
        json!({"position": {"x": 0, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": -1, "y": 1, "z": 1}}),
        json!({"position": {"x": 0, "y": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}}),
        json!({"position": {"x": 0, "y": 0, "z": 0}, "scale": {"x": 1, "y": 1, "z": 1}}),
    ] {
        reject(
            &mut k,
            player(
                "p1",
                "entity.drop",
                json!({"entityId": "a", "transform": bad}),
            ),
            "invalid_value",
        );
    }
    reject(&mut k, drop_at("ghost", 0.0, 0.0), "entity_not_found");
    // "The actor must hold the entity."
    reject(&mut k, drop_at("a", 0.0, 0.0), "not_held");
    accept(
        &mut k,
        player("p2", "entity.grab", json!({"entityId": "b"})),
    );
    reject(&mut k, drop_at("b", 0.0, 0.0), "not_held");
    // "only a canonical stack top may leave its stack": x2 is grabbed as the
    // top, then a script puts another card on top of it.
    grab(&mut k, "x2");
    accept(
        &mut k,
        script("stack.add", json!({"stackId": "st1", "entityId": "loose"})),
    );
    reject(&mut k, drop_at("x2", 0.0, 0.0), "not_stack_top");
}

#[test]
fn can_drop_sees_the_canonical_transform_and_can_refuse() {
    let mut k = room();
    grab(&mut k, "a");
    let mut host = ClosureHost::new().with_guard(|_, req| {
        assert_eq!(req.kind, GuardKind::Drop);
        let x = req.transform.map(|t| t.position.x);
        if x == Some(3.4568) {
            Verdict::Deny {
                reason: Some("not on the river".into()),
            }
        } else {
            Verdict::Allow
        }
    });
    let t = at(3.45678, 0.0, 0.0);
    let msg = reject_with(
        &mut k,
        player(
            "p1",
            "entity.drop",
            json!({"entityId": "a", "transform": t}),
        ),
        "guard_denied",
        &mut host,
    );
    assert_eq!(msg, "not on the river");
    accept_with(&mut k, drop_at("a", 3.0, 0.0), &mut host);
}

#[test]
fn snap_beats_stack_beats_world() {
    let mut k = room();
    // c lies in the world exactly on s1; b dropped there snaps rather than stacks.
    grab(&mut k, "b");
    let ev = accept(&mut k, drop_at("b", 10.0, 0.0));
    assert_eq!(
        ev,
        vec![
            (
                "snap.attached".into(),
                json!({"snapPointId": "s1", "entityId": "b"})
            ),
            ("zone.left".into(), json!({"zoneId": "z1", "entityId": "b"})),
            (
                "entity.dropped".into(),
                json!({"entityId": "b", "playerId": "p1"})
            ),
        ]
    );
    assert_eq!(component(&k, "s1", "snap_point")["attached"], json!(["b"]));
    // Away from snap points, dropping exactly on a world card stacks.
    grab(&mut k, "d");
    let out = k.process_json(
        &json!({"type": "entity.drop", "actionId": "d1", "source": {"kind": "player", "playerId": "p1"},
                "payload": {"entityId": "d", "transform": at(60.0, 0.0, 0.0)}}),
        &mut digipology_kernel::NoScripts,
    );
    let ev = events(&out);
    assert!(
        ev.contains(&(
            "stack.created".into(),
            json!({"stackId": "stack_d1", "items": ["e", "d"]})
        )),
        "{ev:?}"
    );
    // Otherwise the world.
    grab(&mut k, "a");
    let ev = accept(&mut k, drop_at("a", 63.0, 0.0));
    assert!(ev
        .iter()
        .all(|(t, _)| !t.starts_with("stack.") && !t.starts_with("snap.")));
    invariants(&k);
}

#[test]
fn the_nearest_snap_point_wins() {
    let mut k = room();
    grab(&mut k, "a");
    // s1 at x=10 (distance 1.5) vs s2 at x=14 (distance 2.5, radius 2).
    let ev = accept(&mut k, drop_at("a", 11.5, 0.0));
    assert!(ev.contains(&(
        "snap.attached".into(),
        json!({"snapPointId": "s1", "entityId": "a"})
    )));
    // The snapped entity sits at the snap point's position.
    assert_eq!(
        component(&k, "a", "transform")["position"],
        json!({"x": 10, "y": 0, "z": 0})
    );
}

#[test]
fn equal_distance_snap_points_resolve_by_id() {
    let mut k = room();
    grab(&mut k, "a");
    // sa at z=-1 and sb at z=+1: both exactly 1 away.
    let ev = accept(&mut k, drop_at("a", 30.0, 0.0));
    assert!(
        ev.contains(&(
            "snap.attached".into(),
            json!({"snapPointId": "sa", "entityId": "a"})
        )),
        "{ev:?}"
    );
}

#[test]
fn a_full_snap_point_is_skipped() {
    let mut k = room();
    grab(&mut k, "a");
    // s_full (distance 0, capacity 1, holds occupant) is skipped for s_far.
    let ev = accept(&mut k, drop_at("a", 40.0, 0.0));
    assert!(
        ev.contains(&(
            "snap.attached".into(),
            json!({"snapPointId": "s_far", "entityId": "a"})
        )),
        "{ev:?}"
    );
}

#[test]
fn a_tag_mismatch_is_skipped_and_a_shared_tag_attaches() {
    let mut k = room();
    grab(&mut k, "a");
    let ev = accept(&mut k, drop_at("a", 20.0, 0.0));
    assert!(ev.iter().all(|(t, _)| t != "snap.attached"), "{ev:?}");
    grab(&mut k, "red_card");
    let ev = accept(&mut k, drop_at("red_card", 20.5, 0.0));
    assert!(ev.contains(&(
        "snap.attached".into(),
        json!({"snapPointId": "s_red", "entityId": "red_card"})
    )));
}

#[test]
fn dropping_onto_the_top_of_a_stack_extends_it() {
    let mut k = room();
    grab(&mut k, "a");
    let ev = accept(&mut k, drop_at("a", 50.0, 0.0));
    assert!(
        ev.contains(&(
            "stack.changed".into(),
            json!({"stackId": "st1", "items": ["x1", "x2", "a"]})
        )),
        "{ev:?}"
    );
    assert_eq!(
        state_json(&k)["stacks"]["st1"],
        json!({"items": ["x1", "x2", "a"]})
    );
    invariants(&k);
}

#[test]
fn a_non_stackable_entity_never_stacks() {
    let mut k = room();
    grab(&mut k, "nostack");
    let ev = accept(&mut k, drop_at("nostack", 60.0, 0.0));
    assert!(ev.iter().all(|(t, _)| !t.starts_with("stack.")), "{ev:?}");
}

#[test]
fn new_stack_ids_take_the_first_unused_suffix() {
    let mut k = room();
    // A script already took "stack_d2"; the drop with actionId d2 gets _1.
    accept(
        &mut k,
        script(
            "stack.create",
            json!({"stackId": "stack_d2", "items": ["b", "d"]}),
        ),
    );
    grab(&mut k, "a");
    let out = k.process_json(
        &json!({"type": "entity.drop", "actionId": "d2", "source": {"kind": "player", "playerId": "p1"},
                "payload": {"entityId": "a", "transform": at(60.0, 0.0, 0.0)}}),
        &mut digipology_kernel::NoScripts,
    );
    assert!(events(&out).contains(&(
        "stack.created".into(),
        json!({"stackId": "stack_d2_1", "items": ["e", "a"]})
    )));
    // Through the top of the script's stack (d), not its bottom (b).
    grab(&mut k, "loose");
    let ev = accept(&mut k, drop_at("loose", 2.0, 0.0));
    assert!(
        ev.contains(&(
            "stack.changed".into(),
            json!({"stackId": "stack_d2", "items": ["b", "d", "loose"]})
        )),
        "{ev:?}"
    );
    // With no actionId, the assigned a<seq> names the stack.
    grab(&mut k, "red_card");
    let seq = k.state().sequence;
    let ev = accept(&mut k, drop_at("red_card", -80.0, 0.0));
    let name = format!("stack_a{seq}");
    assert!(
        ev.contains(&(
            "stack.created".into(),
            json!({"stackId": name, "items": ["plain_card", "red_card"]})
        )),
        "{ev:?}"
    );
    invariants(&k);
}

#[test]
fn leaving_a_container_snap_point_or_stack_emits_the_old_placement_event_first() {
    let mut k = room();
    grab(&mut k, "in_hand");
    let ev = accept(&mut k, drop_at("in_hand", 100.0, 0.0));
    assert_eq!(
        ev[0],
        (
            "container.removed".into(),
            json!({"containerId": "hand", "entityId": "in_hand", "index": 0})
        )
    );
    assert_eq!(ev[1].0, "zone.entered");
    grab(&mut k, "occupant");
    let ev = accept(&mut k, drop_at("occupant", -80.0, 3.0));
    assert_eq!(
        ev[0],
        (
            "snap.detached".into(),
            json!({"snapPointId": "s_full", "entityId": "occupant"})
        )
    );
    grab(&mut k, "x2");
    let ev = accept(&mut k, drop_at("x2", -70.0, 0.0));
    assert_eq!(
        ev[0],
        (
            "stack.changed".into(),
            json!({"stackId": "st1", "items": ["x1"]})
        )
    );
    // Removing the last item dissolves the record.
    grab(&mut k, "x1");
    let ev = accept(&mut k, drop_at("x1", -60.0, 0.0));
    assert_eq!(ev[0], ("stack.dissolved".into(), json!({"stackId": "st1"})));
    assert_eq!(state_json(&k)["stacks"], json!({}));
    invariants(&k);
}

#[test]
fn dropping_an_entity_without_a_transform_gives_it_one() {
    let mut k = room();
    grab(&mut k, "no_transform");
    accept(&mut k, drop_at("no_transform", 2.0, 2.0));
    assert_eq!(
        component(&k, "no_transform", "transform"),
        at(2.0, 0.0, 2.0)
    );
    assert!(members(&k, "z1")
        .as_array()
        .is_some_and(|m| m.contains(&json!("no_transform"))));
}

#[test]
fn move_places_without_resolution_and_recomputes_zones() {
    let mut k = room();
    // Onto a snap point's position: no snapping; onto a card: no stacking.
    let ev = accept(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "a", "transform": at(10.0, 0.0, 0.0)}),
        ),
    );
    assert_eq!(
        ev,
        vec![("zone.left".into(), json!({"zoneId": "z1", "entityId": "a"}))]
    );
    let ev = accept(
        &mut k,
        system(
            "entity.move",
            json!({"entityId": "b", "transform": at(60.0, 0.0, 0.0)}),
        ),
    );
    assert_eq!(
        ev,
        vec![("zone.left".into(), json!({"zoneId": "z1", "entityId": "b"}))]
    );
    assert_eq!(component(&k, "s1", "snap_point")["attached"], json!([]));
    assert_eq!(
        state_json(&k)["stacks"],
        json!({"st1": {"items": ["x1", "x2"]}})
    );
    // Moving a stack top out of its stack.
    let ev = accept(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "x2", "transform": at(1.0, 0.0, 1.0)}),
        ),
    );
    assert_eq!(
        ev,
        vec![
            (
                "stack.changed".into(),
                json!({"stackId": "st1", "items": ["x1"]})
            ),
            (
                "zone.entered".into(),
                json!({"zoneId": "z1", "entityId": "x2"})
            ),
        ]
    );
    // Out of a container (its transform is kept on the move).
    let ev = accept(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "in_hand", "transform": at(100.0, 0.0, 0.0)}),
        ),
    );
    assert_eq!(
        ev[0],
        (
            "container.removed".into(),
            json!({"containerId": "hand", "entityId": "in_hand", "index": 0})
        )
    );
    assert_eq!(
        ev[1],
        (
            "zone.entered".into(),
            json!({"zoneId": "z2", "entityId": "in_hand"})
        )
    );
    // A moved zone gains and loses members.
    let ev = accept(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "z2", "transform": at(60.0, 0.0, 0.0)}),
        ),
    );
    assert_eq!(
        ev,
        vec![
            (
                "zone.entered".into(),
                json!({"zoneId": "z2", "entityId": "b"})
            ),
            (
                "zone.entered".into(),
                json!({"zoneId": "z2", "entityId": "e"})
            ),
            (
                "zone.left".into(),
                json!({"zoneId": "z2", "entityId": "in_hand"})
            ),
        ]
    );
    invariants(&k);
}

#[test]
fn move_rejections() {
    let mut k = room();
    reject(
        &mut k,
        player(
            "p1",
            "entity.move",
            json!({"entityId": "a", "transform": at(0.0, 0.0, 0.0)}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "a", "transform": at(0.0, 0.0, 0.0), "snap": true}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        script("entity.move", json!({"entityId": "a"})),
        "missing_field",
    );
    reject(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "a", "transform": at(0.0, 0.0, 2_000_000.0)}),
        ),
        "invalid_value",
    );
    reject(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "ghost", "transform": at(0.0, 0.0, 0.0)}),
        ),
        "entity_not_found",
    );
    // "Requires an existing transform component"
    reject(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "no_transform", "transform": at(0.0, 0.0, 0.0)}),
        ),
        "missing_component",
    );
    // "permits only a canonical stack top to move"
    reject(
        &mut k,
        script(
            "entity.move",
            json!({"entityId": "x1", "transform": at(0.0, 0.0, 0.0)}),
        ),
        "not_stack_top",
    );
}

fn cmove(entity: &str, from: Value, to: Value, index: u64) -> Value {
    script(
        "container.move",
        json!({"entity": entity, "from": from, "to": to, "index": index}),
    )
}

#[test]
fn container_move_between_containers_and_the_world() {
    let mut k = room();
    // World → container.
    let ev = accept(&mut k, cmove("a", Value::Null, json!("hand"), 0));
    assert_eq!(
        ev,
        vec![
            (
                "container.moved".into(),
                json!({"entityId": "a", "from": null, "to": "hand", "index": 0, "fromIndex": null})
            ),
            ("zone.left".into(), json!({"zoneId": "z1", "entityId": "a"})),
        ]
    );
    assert_eq!(
        component(&k, "hand", "container")["items"],
        json!(["a", "in_hand"])
    );
    // Container → container at the end: requested index and actual fromIndex.
    let ev = accept(&mut k, cmove("in_hand", json!("hand"), json!("bag"), 0));
    assert_eq!(
        ev[0].1,
        json!({"entityId": "in_hand", "from": "hand", "to": "bag", "index": 0, "fromIndex": 1})
    );
    // Container → world (index 0); back in zone z1 at its old transform.
    let ev = accept(&mut k, cmove("a", json!("hand"), Value::Null, 0));
    assert_eq!(
        ev[0].1,
        json!({"entityId": "a", "from": "hand", "to": null, "index": 0, "fromIndex": 0})
    );
    assert_eq!(
        ev[1],
        (
            "zone.entered".into(),
            json!({"zoneId": "z1", "entityId": "a"})
        )
    );
    invariants(&k);
}

#[test]
fn container_move_rejections() {
    let mut k = room();
    reject(
        &mut k,
        player(
            "p1",
            "container.move",
            json!({"entity": "a", "from": null, "to": "hand", "index": 0}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system(
            "container.move",
            json!({"entity": "a", "from": null, "to": "hand", "index": 0}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "container.move",
            json!({"entity": "a", "from": null, "to": "hand", "index": 0, "x": 1}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        script(
            "container.move",
            json!({"entity": "a", "to": "hand", "index": 0}),
        ),
        "missing_field",
    );
    reject(
        &mut k,
        script(
            "container.move",
            json!({"entity": "a", "from": 3, "to": "hand", "index": 0}),
        ),
        "invalid_type",
    );
    // "index is a non-negative safe integer"
    reject(
        &mut k,
        cmove("a", Value::Null, json!("hand"), 0).tap(|v| v["payload"]["index"] = json!(-1)),
        "invalid_value",
    );
    reject(
        &mut k,
        cmove("a", Value::Null, json!("hand"), 0).tap(|v| v["payload"]["index"] = json!(0.5)),
        "invalid_value",
    );
    // "from and to must differ"
    reject(
        &mut k,
        cmove("in_hand", json!("hand"), json!("hand"), 0),
        "same_container",
    );
    reject(
        &mut k,
        cmove("a", Value::Null, Value::Null, 0),
        "same_container",
    );
    // "A world destination requires index 0."
    reject(
        &mut k,
        cmove("in_hand", json!("hand"), Value::Null, 1),
        "index_out_of_range",
    );
    reject(
        &mut k,
        cmove("ghost", Value::Null, json!("hand"), 0),
        "entity_not_found",
    );
    // "The source must match current membership"
    reject(
        &mut k,
        cmove("a", json!("hand"), json!("bag"), 0),
        "source_mismatch",
    );
    reject(
        &mut k,
        cmove("in_hand", Value::Null, json!("bag"), 0),
        "source_mismatch",
    );
    reject(
        &mut k,
        cmove("x2", Value::Null, json!("bag"), 0),
        "source_mismatch",
    );
    reject(
        &mut k,
        cmove("a", json!("a_missing_box"), json!("bag"), 0),
        "entity_not_found",
    );
    reject(
        &mut k,
        cmove("a", json!("b"), json!("bag"), 0),
        "missing_component",
    );
    // "the target must exist and have capacity"
    reject(
        &mut k,
        cmove("a", Value::Null, json!("nowhere"), 0),
        "entity_not_found",
    );
    reject(
        &mut k,
        cmove("a", Value::Null, json!("b"), 0),
        "missing_component",
    );
    accept(&mut k, cmove("b", Value::Null, json!("bag"), 0));
    reject(
        &mut k,
        cmove("a", Value::Null, json!("bag"), 0),
        "capacity_exceeded",
    );
    // "the insertion index may not exceed its length"
    reject(
        &mut k,
        cmove("a", Value::Null, json!("hand"), 2),
        "index_out_of_range",
    );
    // A container cannot go inside itself or something it holds.
    accept(&mut k, cmove("box", Value::Null, json!("hand"), 0));
    reject(
        &mut k,
        cmove("hand", Value::Null, json!("hand"), 0),
        "container_cycle",
    );
    accept(&mut k, cmove("box", json!("hand"), Value::Null, 0));
    accept(&mut k, cmove("hand", Value::Null, json!("box"), 0));
    reject(
        &mut k,
        cmove("box", Value::Null, json!("hand"), 0),
        "container_cycle",
    );
    invariants(&k);
}

trait Tap {
    fn tap(self, f: impl FnOnce(&mut Self)) -> Self;
}

impl Tap for Value {
    fn tap(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}

#[test]
fn stack_create_add_merge_dissolve() {
    let mut k = room();
    let ev = accept(
        &mut k,
        script(
            "stack.create",
            json!({"stackId": "pile", "items": ["a", "b"]}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "stack.created".into(),
            json!({"stackId": "pile", "items": ["a", "b"]})
        )]
    );
    let ev = accept(
        &mut k,
        script("stack.add", json!({"stackId": "pile", "entityId": "d"})),
    );
    assert_eq!(
        ev,
        vec![(
            "stack.changed".into(),
            json!({"stackId": "pile", "items": ["a", "b", "d"]})
        )]
    );
    let ev = accept(
        &mut k,
        script(
            "stack.merge",
            json!({"targetStackId": "st1", "sourceStackId": "pile"}),
        ),
    );
    assert_eq!(
        ev,
        vec![
            (
                "stack.changed".into(),
                json!({"stackId": "st1", "items": ["x1", "x2", "a", "b", "d"]})
            ),
            ("stack.dissolved".into(), json!({"stackId": "pile"})),
        ]
    );
    invariants(&k);
    let ev = accept(&mut k, script("stack.dissolve", json!({"stackId": "st1"})));
    assert_eq!(
        ev,
        vec![("stack.dissolved".into(), json!({"stackId": "st1"}))]
    );
    assert_eq!(state_json(&k)["stacks"], json!({}));
    // The entities stay, in the world: stackable into a new stack again.
    accept(
        &mut k,
        script(
            "stack.create",
            json!({"stackId": "again", "items": ["x1", "x2"]}),
        ),
    );
    invariants(&k);
}

#[test]
fn stack_rejections() {
    let mut k = room();
    for ty in ["stack.create", "stack.add", "stack.merge", "stack.dissolve"] {
        reject(&mut k, player("p1", ty, json!({})), "source_not_allowed");
    }
    let create =
        |id: &str, items: Value| script("stack.create", json!({"stackId": id, "items": items}));
    reject(&mut k, create("", json!(["a", "b"])), "invalid_value");
    reject(&mut k, create("st1", json!(["a", "b"])), "stack_exists");
    reject(&mut k, create("p", json!(["a"])), "too_few_items");
    reject(&mut k, create("p", json!(["a", "a"])), "duplicate_item");
    reject(
        &mut k,
        create("p", json!(["a", "ghost"])),
        "entity_not_found",
    );
    reject(
        &mut k,
        create("p", json!(["a", "nostack"])),
        "missing_component",
    );
    reject(&mut k, create("p", json!(["a", "in_hand"])), "not_in_world");
    reject(&mut k, create("p", json!(["a", "x2"])), "not_in_world");
    reject(&mut k, create("p", json!("a")), "invalid_type");
    reject(
        &mut k,
        script("stack.add", json!({"stackId": "nope", "entityId": "a"})),
        "stack_not_found",
    );
    reject(
        &mut k,
        script(
            "stack.add",
            json!({"stackId": "st1", "entityId": "occupant"}),
        ),
        "not_in_world",
    );
    reject(
        &mut k,
        script("stack.add", json!({"stackId": "st1", "entityId": "x1"})),
        "not_in_world",
    );
    reject(
        &mut k,
        script(
            "stack.merge",
            json!({"targetStackId": "st1", "sourceStackId": "st1"}),
        ),
        "invalid_value",
    );
    reject(
        &mut k,
        script(
            "stack.merge",
            json!({"targetStackId": "st1", "sourceStackId": "nope"}),
        ),
        "stack_not_found",
    );
    reject(
        &mut k,
        script("stack.dissolve", json!({"stackId": "nope"})),
        "stack_not_found",
    );
    reject(
        &mut k,
        script("stack.dissolve", json!({"stackId": "st1", "force": true})),
        "unknown_key",
    );
}

#[test]
fn remove_top_changes_then_dissolves() {
    let mut k = room();
    // Player or script; callers do not choose the removed identity.
    let ev = accept(
        &mut k,
        player("p1", "stack.remove_top", json!({"stackId": "st1"})),
    );
    assert_eq!(
        ev,
        vec![(
            "stack.changed".into(),
            json!({"stackId": "st1", "items": ["x1"]})
        )]
    );
    let ev = accept(
        &mut k,
        script("stack.remove_top", json!({"stackId": "st1"})),
    );
    assert_eq!(
        ev,
        vec![("stack.dissolved".into(), json!({"stackId": "st1"}))]
    );
    reject(
        &mut k,
        script("stack.remove_top", json!({"stackId": "st1"})),
        "stack_not_found",
    );
    reject(
        &mut k,
        system("stack.remove_top", json!({"stackId": "st1"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "stack.remove_top",
            json!({"stackId": "st1", "entityId": "x1"}),
        ),
        "unknown_key",
    );
    invariants(&k);
}

#[test]
fn snap_attach_detaches_inserts_in_id_order_and_recomputes_zones() {
    let mut k = room();
    let ev = accept(
        &mut k,
        script("snap.attach", json!({"snapPointId": "s2", "entityId": "d"})),
    );
    assert_eq!(
        ev,
        vec![
            (
                "snap.attached".into(),
                json!({"snapPointId": "s2", "entityId": "d"})
            ),
            ("zone.left".into(), json!({"zoneId": "z1", "entityId": "d"})),
        ]
    );
    let ev = accept(
        &mut k,
        script(
            "snap.attach",
            json!({"snapPointId": "s2", "entityId": "in_hand"}),
        ),
    );
    assert_eq!(
        ev[0],
        (
            "container.removed".into(),
            json!({"containerId": "hand", "entityId": "in_hand", "index": 0})
        )
    );
    assert_eq!(
        ev[1],
        (
            "snap.attached".into(),
            json!({"snapPointId": "s2", "entityId": "in_hand"})
        )
    );
    accept(
        &mut k,
        script("snap.attach", json!({"snapPointId": "s2", "entityId": "a"})),
    );
    assert_eq!(
        component(&k, "s2", "snap_point")["attached"],
        json!(["a", "d", "in_hand"])
    );
    // Moving from one snap point to another detaches first.
    let ev = accept(
        &mut k,
        script("snap.attach", json!({"snapPointId": "sa", "entityId": "a"})),
    );
    assert_eq!(
        ev[0],
        (
            "snap.detached".into(),
            json!({"snapPointId": "s2", "entityId": "a"})
        )
    );
    invariants(&k);
}

#[test]
fn snap_attach_rejections() {
    let mut k = room();
    let attach = |s: &str, e: &str| script("snap.attach", json!({"snapPointId": s, "entityId": e}));
    reject(
        &mut k,
        player(
            "p1",
            "snap.attach",
            json!({"snapPointId": "s1", "entityId": "a"}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "snap.attach",
            json!({"snapPointId": "s1", "entityId": "a", "x": 0}),
        ),
        "unknown_key",
    );
    reject(
        &mut k,
        script("snap.attach", json!({"snapPointId": "s1"})),
        "missing_field",
    );
    // "The IDs must differ and identify an existing snap point and entity."
    reject(&mut k, attach("s1", "s1"), "same_entity");
    reject(&mut k, attach("ghost", "a"), "entity_not_found");
    reject(&mut k, attach("a", "b"), "missing_component");
    reject(&mut k, attach("s1", "ghost"), "entity_not_found");
    // "The entity may not already be attached there"
    reject(&mut k, attach("s_full", "occupant"), "already_attached");
    // "only a stack top can leave a stack"
    reject(&mut k, attach("s2", "x1"), "not_stack_top");
    // "capacity must remain"
    reject(&mut k, attach("s_full", "a"), "capacity_exceeded");
    // "at least one required snap tag must match when the snap point has tags"
    reject(&mut k, attach("s_red", "a"), "tag_mismatch");
    accept(&mut k, attach("s_red", "red_card"));
    accept(&mut k, attach("s2", "x2"));
    invariants(&k);
}

#[test]
fn player_left_releases_held_entities_before_seats_in_id_order() {
    let mut k = room();
    accept(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
    );
    grab(&mut k, "d");
    grab(&mut k, "b");
    let ev = accept(
        &mut k,
        system("system.player_left", json!({"playerId": "p1"})),
    );
    let types: Vec<&str> = ev.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "entity.dropped",
            "entity.dropped",
            "seat.left",
            "player.left"
        ]
    );
    assert_eq!(ev[0].1["entityId"], json!("b"));
    assert_eq!(ev[1].1["entityId"], json!("d"));
}

/// Two seats' hands, a hidden pile and a public tray; p1 sits in north,
/// p2 in south, p3 in no seat.
fn hands() -> Kernel {
    let card = |id: &str| json!({"id": id, "components": {"grabbable": {}, "flippable": {}}});
    let mut entities = vec![
        json!({"id": "hand_n", "components": {"container": {"visibility": "private", "owner": "north", "items": ["n1", "n2", "n3"]}}}),
        json!({"id": "hand_s", "components": {"container": {"visibility": "private", "owner": "south", "items": ["s1", "s2"]}}}),
        json!({"id": "pile", "components": {"container": {"visibility": "hidden", "items": ["p1", "p2"]}}}),
        json!({"id": "tray", "components": {"container": {"items": ["t1", "t2"]}}}),
        json!({"id": "hand_p3", "tags": ["hand"], "props": {"owner": "p3"}, "components": {"container": {"items": ["h1", "h2"]}}}),
        json!({"id": "plain", "components": {}}),
    ];
    for id in [
        "n1", "n2", "n3", "s1", "s2", "p1", "p2", "t1", "t2", "h1", "h2",
    ] {
        entities.push(card(id));
    }
    let mut k = started(
        &json!({"apiVersion": 3, "seats": ["north", "south"], "entities": entities}),
        1,
    );
    for p in ["p1", "p2", "p3"] {
        accept(
            &mut k,
            system("system.player_joined", json!({"playerId": p})),
        );
    }
    for (p, seat) in [("p1", "north"), ("p2", "south")] {
        accept(
            &mut k,
            system("system.seat_assign", json!({"playerId": p, "seatId": seat})),
        );
    }
    k
}

fn reorder(p: &str, container: &str, items: Value) -> Value {
    player(
        p,
        "container.reorder",
        json!({"entityId": container, "items": items}),
    )
}

fn items_of(k: &Kernel, container: &str) -> Value {
    component(k, container, "container")["items"].clone()
}

#[test]
fn container_reorder_puts_a_players_own_hand_in_the_order_it_names() {
    let mut k = hands();
    let ev = accept(&mut k, reorder("p1", "hand_n", json!(["n3", "n1", "n2"])));
    assert_eq!(items_of(&k, "hand_n"), json!(["n3", "n1", "n2"]));
    assert_eq!(
        ev,
        vec![(
            "container.reordered".to_owned(),
            json!({"containerId": "hand_n", "items": ["n3", "n1", "n2"]})
        )]
    );
    // The same order again is still an action, and an event: whether a
    // hand was already in order is not told by its absence.
    let ev = accept(&mut k, reorder("p1", "hand_n", json!(["n3", "n1", "n2"])));
    assert_eq!(ev.len(), 1);
    // A public hand tagged for its player (`hand`, `props.owner`): its
    // player's, seated or not; nobody else's.
    accept(&mut k, reorder("p3", "hand_p3", json!(["h2", "h1"])));
    assert_eq!(items_of(&k, "hand_p3"), json!(["h2", "h1"]));
    reject(
        &mut k,
        reorder("p1", "hand_p3", json!(["h1", "h2"])),
        "not_yours",
    );
    // A public container that is nobody's hand: no player's to arrange.
    reject(
        &mut k,
        reorder("p1", "tray", json!(["t2", "t1"])),
        "not_yours",
    );
    assert_eq!(items_of(&k, "tray"), json!(["t1", "t2"]));
}

/// Players sort their hands from API 3: an older game never offered it
/// (docs/lua-api.md, API versions).
#[test]
fn container_reorder_is_for_players_of_api_3_games() {
    let hand = json!({"id": "hand_n", "components": {"container": {
        "visibility": "private", "owner": "north", "items": ["n1", "n2"]}}});
    let card = |id: &str| json!({"id": id, "components": {"grabbable": {}}});
    let mut k = started(
        &json!({"apiVersion": 2, "seats": ["north"], "entities": [hand, card("n1"), card("n2")]}),
        1,
    );
    accept(
        &mut k,
        system("system.player_joined", json!({"playerId": "p1"})),
    );
    accept(
        &mut k,
        system(
            "system.seat_assign",
            json!({"playerId": "p1", "seatId": "north"}),
        ),
    );
    let m = reject(
        &mut k,
        reorder("p1", "hand_n", json!(["n2", "n1"])),
        "source_not_allowed",
    );
    assert!(m.contains("apiVersion 3"), "{m}");
    accept(
        &mut k,
        script(
            "container.reorder",
            json!({"entityId": "hand_n", "items": ["n2", "n1"]}),
        ),
    );
    assert_eq!(items_of(&k, "hand_n"), json!(["n2", "n1"]));
}

#[test]
fn container_reorder_rejections() {
    let mut k = hands();
    let r = |k: &mut Kernel, a: Value, code: &str| reject(k, a, code);
    r(&mut k, reorder("p1", "nope", json!([])), "entity_not_found");
    r(
        &mut k,
        reorder("p1", "plain", json!([])),
        "missing_component",
    );
    // Only the player's own hand.
    let m = r(
        &mut k,
        reorder("p2", "hand_n", json!(["n3", "n1", "n2"])),
        "not_yours",
    );
    assert!(m.contains("hand_n"), "{m}");
    r(
        &mut k,
        reorder("p3", "hand_n", json!(["n3", "n1", "n2"])),
        "not_yours",
    );
    r(
        &mut k,
        reorder("p1", "pile", json!(["p2", "p1"])),
        "not_yours",
    );
    // Refused before the items are looked at: naming a real card of the
    // hand or a made-up one reads the same.
    let real = r(&mut k, reorder("p2", "hand_n", json!(["n1"])), "not_yours");
    let fake = r(&mut k, reorder("p2", "hand_n", json!(["zz"])), "not_yours");
    assert_eq!(real, fake);
    // The items: each of the container's, once.
    let m = r(
        &mut k,
        reorder("p1", "hand_n", json!(["n1", "s1", "n2"])),
        "source_mismatch",
    );
    assert!(m.contains("\"s1\" is not in \"hand_n\""), "{m}");
    r(
        &mut k,
        reorder("p1", "hand_n", json!(["n1", "zz", "n2"])),
        "source_mismatch",
    );
    r(
        &mut k,
        reorder("p1", "hand_n", json!(["n1", "n1", "n2"])),
        "duplicate_item",
    );
    let m = r(
        &mut k,
        reorder("p1", "hand_n", json!(["n2", "n1"])),
        "too_few_items",
    );
    assert!(m.contains("2 of the 3"), "{m}");
    r(&mut k, reorder("p1", "hand_n", json!([])), "too_few_items");
    // The shape.
    r(&mut k, reorder("p1", "hand_n", json!("n1")), "invalid_type");
    r(
        &mut k,
        reorder("p1", "hand_n", json!([1, 2, 3])),
        "invalid_type",
    );
    r(
        &mut k,
        player("p1", "container.reorder", json!({"entityId": "hand_n"})),
        "missing_field",
    );
    r(
        &mut k,
        player(
            "p1",
            "container.reorder",
            json!({"entityId": "hand_n", "items": ["n1", "n2", "n3"], "index": 0}),
        ),
        "unknown_key",
    );
    // Not a system action; a script arranges any container (the game's
    // rules), another seat's hand included.
    r(
        &mut k,
        system(
            "container.reorder",
            json!({"entityId": "hand_n", "items": ["n1", "n2", "n3"]}),
        ),
        "source_not_allowed",
    );
    assert_eq!(items_of(&k, "hand_n"), json!(["n1", "n2", "n3"]));
    accept(
        &mut k,
        script(
            "container.reorder",
            json!({"entityId": "hand_n", "items": ["n3", "n1", "n2"]}),
        ),
    );
    assert_eq!(items_of(&k, "hand_n"), json!(["n3", "n1", "n2"]));
}

#[test]
fn container_reorder_is_rolled_back_with_its_action() {
    let mut k = hands();
    reject_with(
        &mut k,
        reorder("p1", "hand_n", json!(["n3", "n2", "n1"])),
        "script_error",
        &mut failing_host(),
    );
    assert_eq!(items_of(&k, "hand_n"), json!(["n1", "n2", "n3"]));
    accept(&mut k, reorder("p1", "hand_n", json!(["n3", "n2", "n1"])));
    assert_eq!(items_of(&k, "hand_n"), json!(["n3", "n2", "n1"]));
}
