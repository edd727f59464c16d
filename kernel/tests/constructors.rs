//! The typed action constructors build exactly the action their JSON
//! envelope does, and the kernel answers both alike.

use digipology_kernel::{state_from_game, Action, Kernel, NoScripts, Source};
use serde_json::json;

fn parsed(v: serde_json::Value) -> Action {
    Action::from_json(&v).expect("a valid envelope")
}

#[test]
fn each_constructor_equals_its_json_envelope() {
    let p1 = json!({"kind": "player", "playerId": "p1"});
    let cases = [
        (
            Action::counter_add(Source::player("p1"), "score", 2.0),
            json!({"type": "counter.add", "source": p1, "payload": {"entityId": "score", "amount": 2}}),
        ),
        (
            Action::counter_set(Source::system(), "score", 7.5),
            json!({"type": "counter.set", "source": {"kind": "system"}, "payload": {"entityId": "score", "value": 7.5}}),
        ),
        (
            Action::entity_flip(Source::script("main", "global"), "card"),
            json!({"type": "entity.flip", "source": {"kind": "script", "scriptId": "main", "bindingId": "global"}, "payload": {"entityId": "card"}}),
        ),
        (
            Action::entity_grab(Source::player("p1"), "card"),
            json!({"type": "entity.grab", "source": p1, "payload": {"entityId": "card"}}),
        ),
        (
            Action::button_press(Source::player("p1"), "btn"),
            json!({"type": "button.press", "source": p1, "payload": {"entityId": "btn"}}),
        ),
        (
            Action::die_roll(Source::player("p1"), "d6"),
            json!({"type": "die.roll", "source": p1, "payload": {"entityId": "d6"}}),
        ),
        (
            Action::text_set(Source::system(), "sign", "hi"),
            json!({"type": "text.set", "source": {"kind": "system"}, "payload": {"entityId": "sign", "value": "hi"}}),
        ),
        (
            Action::deck_shuffle(Source::player("p1"), "deck"),
            json!({"type": "deck.shuffle", "source": p1, "payload": {"deckId": "deck"}}),
        ),
        (
            Action::deck_draw_to_container(Source::player("p1"), "deck", "hand", 2),
            json!({"type": "deck.draw_to_container", "source": p1, "payload": {"deckId": "deck", "target": "hand", "count": 2}}),
        ),
        (
            Action::game_start(),
            json!({"type": "system.game_start", "source": {"kind": "system"}, "payload": {}}),
        ),
        (
            Action::player_joined("p1", Some("Ann")).with_id("join-1"),
            json!({"type": "system.player_joined", "source": {"kind": "system"}, "payload": {"playerId": "p1", "name": "Ann"}, "actionId": "join-1"}),
        ),
    ];
    for (typed, envelope) in cases {
        let from_json = parsed(envelope.clone());
        assert_eq!(typed.action_type, from_json.action_type, "{envelope}");
        assert_eq!(typed.source, from_json.source, "{envelope}");
        assert_eq!(typed.action_id, from_json.action_id, "{envelope}");
        assert_eq!(
            typed.payload.to_json(),
            from_json.payload.to_json(),
            "{envelope}"
        );
    }
}

#[test]
fn a_typed_stream_and_its_json_stream_give_the_same_events_and_hash() {
    let game = json!({
        "seats": ["north"],
        "entities": [
            {"id": "score", "components": {"counter": {}}},
            {"id": "card", "components": {"flippable": {}, "grabbable": {}}},
            {"id": "c1", "components": {}}, {"id": "c2", "components": {}},
            {"id": "deck", "components": {"deck": {}, "container": {"items": ["c1", "c2"]}}},
            {"id": "hand", "components": {"container": {}}}
        ]
    });
    let typed = [
        Action::game_start(),
        Action::player_joined("p1", None),
        Action::counter_add(Source::player("p1"), "score", 3.0),
        Action::entity_flip(Source::player("p1"), "card"),
        Action::deck_shuffle(Source::player("p1"), "deck"),
        Action::deck_draw_to_container(Source::player("p1"), "deck", "hand", 1),
        Action::counter_add(Source::player("p1"), "nope", 1.0),
    ];
    let run = |actions: Vec<Action>| {
        let mut k = Kernel::new(state_from_game(&game, 9).expect("loads"));
        let lines: Vec<String> = actions
            .iter()
            .flat_map(|a| k.process(a, &mut NoScripts).events)
            .map(|e| e.to_json_line())
            .collect();
        (lines, k.state_hash())
    };
    let json_actions: Vec<Action> = typed
        .iter()
        .map(|a| {
            let mut v = json!({
                "type": a.action_type.as_str(),
                "source": match &a.source {
                    Source::Player { player_id } => json!({"kind": "player", "playerId": &**player_id}),
                    _ => json!({"kind": "system"}),
                },
                "payload": a.payload.to_json(),
            });
            if let Some(id) = &a.action_id {
                v["actionId"] = json!(&**id);
            }
            parsed(v)
        })
        .collect();
    let (typed_events, typed_hash) = run(typed.to_vec());
    let (json_events, json_hash) = run(json_actions);
    assert_eq!(typed_events, json_events);
    assert_eq!(typed_hash, json_hash);
    assert!(typed_events.iter().any(|l| l.contains("action.rejected")));
}
