//! Every event that names entities reaches their entity bindings — and only
//! theirs (docs/lua-api.md, "Scripts and bindings": an entity binding
//! receives only the events whose data names its entity).
//!
//! Each entity of a small table has its own watching script, bound to it,
//! with a handler for every event type in the kernel's event table. A run of
//! actions then emits every event type that names entities, and each
//! watcher's record must be exactly the events whose entity list (from the
//! table's `[entity …]` keys) holds its entity. A new event row naming
//! entities fails this test until a step here emits it.

use std::collections::{BTreeMap, BTreeSet};

use digipology_kernel::event::{Field, EVENT_TABLE};
use digipology_kernel::{handler_name, state_from_game, Kernel};
use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
use serde_json::{json, Value};

fn table() -> Value {
    json!({
        "seats": ["north"],
        "entities": [
            {"id": "card", "components": {"grabbable": {}, "flippable": {}, "stackable": {}, "transform": {"position": {"x": 1, "y": 0, "z": 0}}}},
            {"id": "card2", "components": {"grabbable": {}, "stackable": {}, "transform": {"position": {"x": 2, "y": 0, "z": 0}}}},
            {"id": "c1", "components": {"grabbable": {}}},
            {"id": "c2", "components": {"grabbable": {}}},
            {"id": "c3", "components": {"grabbable": {}}},
            {"id": "c4", "components": {"grabbable": {}}},
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["c1", "c2", "c3", "c4"]}}},
            {"id": "hand", "components": {"container": {}}},
            {"id": "d6", "components": {"die": {}}},
            {"id": "score", "components": {"counter": {}}},
            {"id": "btn", "components": {"button": {}}},
            {"id": "sign", "components": {"text": {}}},
            {"id": "slot", "components": {"snap_point": {}, "transform": {"position": {"x": 50, "y": 0, "z": 0}}}},
            {"id": "zone", "components": {"zone": {"halfExtents": {"x": 5, "y": 5, "z": 5}}, "transform": {"position": {"x": -20, "y": 0, "z": 0}}}},
            {"id": "gone", "components": {"grabbable": {}}}
        ],
        "prefabs": {"token": {"components": {"grabbable": {}}}}
    })
}

/// A watcher: on every event type it appends `seq:type` to its storage.
fn watcher_source() -> String {
    let mut src = String::new();
    let types: BTreeSet<&str> = EVENT_TABLE.iter().map(|r| r.type_name).collect();
    for ty in types {
        src.push_str(&format!(
            "function {}(event)\n  storage.seen = storage.seen or {{}}\n  \
             table.insert(storage.seen, event.seq .. \":\" .. event.type)\nend\n",
            handler_name(ty)
        ));
    }
    src
}

fn system(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "system"}, "payload": payload})
}

fn player(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "player", "playerId": "p1"}, "payload": payload})
}

fn script(ty: &str, payload: Value) -> Value {
    json!({"type": ty, "source": {"kind": "script", "scriptId": "driver", "bindingId": "global"}, "payload": payload})
}

fn at(x: f64) -> Value {
    json!({"position": {"x": x, "y": 0, "z": 0}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1}, "scale": {"x": 1, "y": 1, "z": 1}})
}

/// Actions that, together, emit every event type naming entities.
fn steps() -> Vec<Value> {
    vec![
        system("system.game_start", json!({})),
        system("system.player_joined", json!({"playerId": "p1"})),
        // A game sorting a pile (players sort only their own hands).
        script(
            "container.reorder",
            json!({"entityId": "deck", "items": ["c4", "c3", "c2", "c1"]}),
        ),
        player("entity.grab", json!({"entityId": "card"})),
        player(
            "entity.drop",
            json!({"entityId": "card", "transform": at(-20.0)}),
        ),
        player("entity.flip", json!({"entityId": "card"})),
        script(
            "entity.move",
            json!({"entityId": "card", "transform": at(0.0)}),
        ),
        script(
            "snap.attach",
            json!({"entityId": "card2", "snapPointId": "slot"}),
        ),
        script(
            "entity.move",
            json!({"entityId": "card2", "transform": at(30.0)}),
        ),
        script(
            "container.move",
            json!({"entity": "card2", "from": null, "to": "hand", "index": 0}),
        ),
        script(
            "entity.move",
            json!({"entityId": "card2", "transform": at(30.0)}),
        ),
        script(
            "stack.create",
            json!({"stackId": "pile", "items": ["card", "card2"]}),
        ),
        script("stack.remove_top", json!({"stackId": "pile"})),
        player("deck.shuffle", json!({"deckId": "deck"})),
        player(
            "deck.draw_to_container",
            json!({"deckId": "deck", "target": "hand", "count": 1}),
        ),
        player("deck.draw_to_world", json!({"deckId": "deck"})),
        player(
            "deck.deal",
            json!({"deckId": "deck", "targets": ["hand"], "cardsEach": 1}),
        ),
        player("die.roll", json!({"entityId": "d6"})),
        player("counter.add", json!({"entityId": "score", "amount": 2})),
        player("button.press", json!({"entityId": "btn"})),
        script("text.set", json!({"entityId": "sign", "value": "hi"})),
        script(
            "entity.spawn",
            json!({"prefabId": "token", "transform": at(-20.0)}),
        ),
        script("entity.destroy", json!({"entityId": "gone"})),
        script("entity.reveal", json!({"entityId": "card", "to": "all"})),
        script(
            "container.set_visibility",
            json!({"containerId": "hand", "visibility": "hidden"}),
        ),
    ]
}

#[test]
fn every_event_naming_entities_reaches_exactly_their_entity_bindings() {
    let game = table();
    let state = state_from_game(&game, 1).expect("game loads");
    let ids: Vec<String> = game["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect();
    let watcher = watcher_source();
    let mut specs = vec![ScriptSpec {
        id: "driver".into(),
        file: "scripts/driver.lua".into(),
        source: String::new(),
        bindings: vec![BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    }];
    for id in &ids {
        specs.push(ScriptSpec {
            id: format!("w_{id}"),
            file: format!("scripts/w_{id}.lua"),
            source: watcher.clone(),
            bindings: vec![BindingSpec {
                id: "b".into(),
                entity: Some(id.clone()),
            }],
        });
    }
    let mut host =
        LuaHost::new(&specs, Modules::new(), &state, Limits::default()).expect("scripts load");
    let mut kernel = Kernel::new(state);

    // What each entity binding must have seen: every event naming it.
    let mut want: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut emitted: BTreeSet<&str> = BTreeSet::new();
    for action in steps() {
        let out = kernel.process_json(&action, &mut host);
        assert!(
            out.accepted(),
            "{action} is refused: {:?}",
            out.events
                .iter()
                .map(|e| e.to_json_line())
                .collect::<Vec<_>>()
        );
        for e in &out.events {
            emitted.insert(e.type_name());
            // Every data value naming an entity of the table sits under a
            // key the table marks `[entity …]`: none is forgotten.
            let row = EVENT_TABLE
                .iter()
                .find(|r| r.type_name == e.type_name())
                .expect("every event has a row");
            e.kind.fields(&mut |key, field| {
                let values: Vec<&str> = match field {
                    Field::Str(s) => vec![s],
                    Field::Ids(list) => list.iter().map(|i| &**i).collect(),
                    _ => Vec::new(),
                };
                if values.iter().any(|v| ids.iter().any(|id| id == v)) {
                    assert!(
                        row.entity_keys().contains(&key),
                        "{}.{key} names an entity but is not marked [entity]",
                        row.type_name
                    );
                }
            });
            let named: BTreeSet<&str> = e.kind.entity_ids().iter().map(|i| &***i).collect();
            for id in &ids {
                if named.contains(id.as_str()) {
                    want.entry(id.as_str()).or_default().push(format!(
                        "{}:{}",
                        e.seq,
                        e.type_name()
                    ));
                }
            }
        }
    }

    for row in EVENT_TABLE.iter().filter(|r| !r.entity_keys().is_empty()) {
        assert!(
            emitted.contains(row.type_name),
            "{} names entities ({:?}) but no step here emits it: add one",
            row.type_name,
            row.entity_keys()
        );
    }

    let doc: Value = serde_json::from_str(&kernel.state().canonical_json()).expect("state JSON");
    for id in &ids {
        let seen: Vec<String> = doc["storage"][format!("w_{id}")]["seen"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().expect("string").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let expected = want.get(id.as_str()).cloned().unwrap_or_default();
        assert_eq!(
            seen, expected,
            "the binding on {id} sees exactly the events naming {id}"
        );
    }
    // The watchers did see something: the test is not vacuous.
    for id in [
        "card", "card2", "deck", "hand", "slot", "zone", "d6", "score", "btn", "sign", "gone",
    ] {
        assert!(want.contains_key(id), "no event named {id}");
    }
}
