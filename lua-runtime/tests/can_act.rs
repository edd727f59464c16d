//! The general guard `can_act(player, action)` (docs/lua-api.md, Guards):
//! asked about every player action, before the action's own checks.

mod common;

use common::{events, global, player, script_error, start};
use serde_json::json;

const SRC: &str = r#"
function can_act(player, action)
  if action.type == "deck.shuffle" then return false, "no shuffling, " .. player.id end
  if action.type == "counter.add" and action.payload.amount > 5 then
    return false, "at most 5 at a time"
  end
  -- A guard's copy of the action is its own: changing it changes nothing.
  action.payload.amount = 1000
  return true
end
"#;

#[test]
fn can_act_refuses_actions_no_other_guard_could() {
    let (mut k, mut host) = global(SRC);
    start(&mut k, &mut host);
    for (action, reason) in [
        (
            player("p1", "deck.shuffle", json!({"deckId": "deck"})),
            "no shuffling, p1",
        ),
        (
            player(
                "p2",
                "counter.add",
                json!({"entityId": "score", "amount": 6}),
            ),
            "at most 5 at a time",
        ),
    ] {
        let hash = k.state_hash();
        let out = k.process_json(&action, &mut host);
        let ev = events(&out);
        assert_eq!(ev[0].0, "action.rejected", "{ev:?}");
        assert_eq!(ev[0].1["code"], json!("guard_denied"));
        assert_eq!(ev[0].1["message"], json!(reason));
        assert_eq!(k.state_hash(), hash, "a refused action changed nothing");
    }
    // Allowed: the guard's change to its copy of the payload did nothing.
    let out = k.process_json(
        &player(
            "p2",
            "counter.add",
            json!({"entityId": "score", "amount": 2}),
        ),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(common::component(&k, "score", "counter")["value"], json!(2));
}

#[test]
fn can_act_is_not_asked_about_script_or_system_actions() {
    let (mut k, mut host) = global(
        r#"
function can_act(player, action) return false, "players may not" end
function on_button_pressed(event) end
function on_start(event) game.entity("deck"):shuffle() end
"#,
    );
    let outs = start(&mut k, &mut host);
    assert!(
        outs.iter().all(|o| o.accepted()),
        "system actions and script subcommands pass"
    );
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert_eq!(events(&out)[0].1["code"], json!("guard_denied"));
}

#[test]
fn can_act_is_read_only() {
    let (mut k, mut host) = global(
        r#"
function can_act(player, action) game.entity("score"):add(1) return true end
"#,
    );
    start(&mut k, &mut host);
    let err = script_error(
        &mut k,
        &mut host,
        player("p1", "entity.flip", json!({"entityId": "card"})),
        "guard_mutation",
    );
    assert_eq!(err["function"], json!("can_act"));
}
