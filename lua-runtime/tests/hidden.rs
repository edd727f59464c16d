//! The Lua methods for hidden information (docs/lua-api.md, Writes):
//! `set_visibility`, `reveal`, `reveal_to`, `peek` — what they change, and
//! that bad arguments fail the action and change nothing.

mod common;

use common::*;
use serde_json::{json, Value};

const SRC: &str = r#"
function on_button_pressed(event)
  local deck, hand = game.entity("deck"), game.entity("hand")
  if event.data.entityId == "btn" then
    deck:set_visibility("hidden")
    hand:set_visibility("private", "north")
    deck:draw_to(hand, 2)
    deck:top():reveal()
    hand:peek("south")
  elseif storage.bad == "peek" then
    hand:peek(5)
  else
    hand:set_visibility("private", "west")
  end
end
function on_counter_changed(event)
  storage.bad = "peek"
end
"#;

fn entity(k: &digipology_kernel::Kernel, id: &str) -> Value {
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state JSON");
    doc["entities"][id].clone()
}

#[test]
fn lua_hides_a_pile_deals_a_private_hand_reveals_and_peeks() {
    let (mut k, mut host) = global(SRC);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(
        component(&k, "deck", "container")["visibility"],
        json!("hidden")
    );
    assert_eq!(
        component(&k, "hand", "container"),
        json!({"capacity": null, "items": ["c3", "c2"], "owner": "north", "visibility": "private"})
    );
    assert_eq!(entity(&k, "c1")["revealedTo"], json!("all"));
    for card in ["c2", "c3"] {
        assert_eq!(entity(&k, card)["revealedTo"], json!(["south"]), "{card}");
    }
    let types: Vec<String> = events(&out).into_iter().map(|(t, _)| t).collect();
    assert_eq!(types.iter().filter(|t| *t == "entity.revealed").count(), 3);
    // The peek reveals in id order, not the hand's (c3, c2): the order of
    // its events tells nobody where a card lies (docs/observations.md,
    // Positions).
    let peeked: Vec<Value> = events(&out)
        .into_iter()
        .filter(|(t, d)| t == "entity.revealed" && d["seats"] == json!(["south"]))
        .map(|(_, d)| d["entityId"].clone())
        .collect();
    assert_eq!(peeked, vec![json!("c2"), json!("c3")]);
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "container.visibility_changed")
            .count(),
        2
    );
}

#[test]
fn a_bad_seat_or_visibility_fails_the_action_and_changes_nothing() {
    let (mut k, mut host) = global(SRC);
    start(&mut k, &mut host);
    let e = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn2"})),
        "subcommand",
    );
    assert!(e["message"].as_str().unwrap_or("").contains("west"), "{e}");
    serves(&mut k, &mut host);
    let e = script_error(
        &mut k,
        &mut host,
        player("p1", "button.press", json!({"entityId": "btn2"})),
        "runtime",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("peek expects a seat id"),
        "{e}"
    );
    serves(&mut k, &mut host);
}

/// A counter change is accepted (and, after the first, arms the bad peek).
fn serves(k: &mut digipology_kernel::Kernel, host: &mut digipology_lua::LuaHost) {
    let add = player(
        "p1",
        "counter.add",
        json!({"entityId": "other", "amount": 1}),
    );
    assert!(
        k.process_json(&add, host).accepted(),
        "the room still serves"
    );
}

/// docs/observations.md, A game's own view: `observe(seat)` and
/// `public_view()` answer a plain value, run read-only under the budget,
/// and a failure is an error (the room turns it into a null view).
#[test]
fn a_game_shapes_each_viewers_view_read_only() {
    let src = r#"
function observe(seat)
  if seat == "south" then game.entity("score"):add(1) end
  if seat == "west" then return function() end end
  if seat == "east" then while true do end end
  return { seat = seat, score = game.entity("score").value }
end
function public_view() return "public" end
"#;
    let (mut k, mut host) = global(src);
    start(&mut k, &mut host);
    let view =
        |host: &mut digipology_lua::LuaHost, k: &digipology_kernel::Kernel, seat: Option<&str>| {
            host.view(k.state(), seat)
                .map(|r| r.map(|v| v.to_canonical_json()))
        };
    assert_eq!(
        view(&mut host, &k, Some("north")),
        Some(Ok(r#"{"score":0,"seat":"north"}"#.to_owned()))
    );
    assert_eq!(view(&mut host, &k, None), Some(Ok("\"public\"".to_owned())));
    let hash = k.state_hash();
    for (seat, kind) in [
        ("south", "guard_mutation"),
        ("west", "runtime"),
        ("east", "budget"),
    ] {
        let failure = host
            .view(k.state(), Some(seat))
            .expect("defined")
            .expect_err(seat);
        assert_eq!(failure.kind.as_str(), kind, "{seat}: {failure:?}");
        assert_eq!(failure.function, "observe");
    }
    assert_eq!(k.state_hash(), hash, "a view changes nothing");
    // A game without them: no view.
    let (k2, mut host2) = global("function on_start() end");
    assert!(host2.view(k2.state(), Some("north")).is_none());
}
