//! The table page (docs/table.md) end to end: a real `digipology serve` on
//! a loopback port and a real headless Chromium playing on the page with
//! mouse and keys. Each test leaves screenshots in its folder under
//! `target/table-page/`.

#[path = "common/browser.rs"]
mod browser;
mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::PathBuf;

use browser::Browser;
use serde_json::{json, Value};
use serving::{request, Server};

/// `POST path` with a JSON body, answered 2xx with JSON.
fn post(server: &Server, path: &str, body: &Value) -> Value {
    let r = request(
        &server.addr,
        "POST",
        path,
        None,
        Some(body.to_string().as_bytes()),
    );
    assert!(
        r.status < 300,
        "{path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// A small table: a counter a button raises (by script), a card to drag
/// onto a slot, a button that asks a prompt, and each seat's private hand
/// holding a card whose label is a marker (the canary).
const GAME: &str = r#"{
  "id": "table-test", "name": "Table test", "version": "1.0.0", "kernelVersion": 1,
  "seats": ["a", "b"],
  "entities": [
    { "id": "score", "props": {"label": "Score"}, "components": { "counter": { "value": 0, "min": 0 } } },
    { "id": "bump", "props": {"label": "Bump"}, "components": { "button": {} } },
    { "id": "ask", "props": {"label": "Ask me"}, "components": { "button": {} } },
    { "id": "answer", "components": { "text": { "value": "no answer yet" } } },
    { "id": "card", "tags": ["card"], "props": {"label": "Ace"}, "components": { "transform": { "position": { "x": -3, "y": 0, "z": 0 } }, "grabbable": {}, "flippable": {} } },
    { "id": "slot", "components": { "transform": { "position": { "x": 3, "y": 0, "z": 0 } }, "snap_point": { "capacity": 1, "radius": 1.5, "tags": ["card"] } } },
    { "id": "hand_a", "components": { "container": { "visibility": "private", "owner": "a", "items": ["secret_a"] } } },
    { "id": "hand_b", "components": { "container": { "visibility": "private", "owner": "b", "items": ["secret_b"] } } },
    { "id": "secret_a", "props": {"label": "MARK-A-5e1d"}, "components": { "grabbable": {}, "flippable": {} } },
    { "id": "secret_b", "props": {"label": "MARK-B-9c4f"}, "components": { "grabbable": {}, "flippable": {} } }
  ],
  "scripts": [ { "id": "main", "file": "scripts/main.lua", "bindings": [{ "id": "global" }] } ]
}"#;

fn script(step: i64) -> String {
    format!(
        r#"-- The table test's rules.
function on_button_pressed(event)
  if event.data.entityId == "bump" then
    game.entity("score"):add({step})
  elseif event.data.entityId == "ask" then
    ui:prompt(event.data.playerId, "Pick a colour", {{ "red", "blue" }},
      {{ callback = "picked", default = "blue" }})
  end
end

function picked(answer, event)
  game.entity("answer"):set_text("picked " .. answer)
end
"#
    )
}

/// A fresh folder for one test, and the test game in it.
fn setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = common::root().join("target").join("table-page").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let game = dir.join("table-test");
    std::fs::create_dir_all(game.join("scripts")).expect("game folder");
    std::fs::write(game.join("game.json"), GAME).expect("game.json");
    std::fs::write(game.join("scripts/main.lua"), script(1)).expect("script");
    (dir, game)
}

/// A designer's match of the test game with both seats taken: the seats'
/// join answers.
fn both_seats(server: &Server) -> (Value, Value) {
    let m = post(server, "/games/table-test/matches", &json!({}));
    let id = m["matchId"].as_str().expect("match id").to_owned();
    let a = post(
        server,
        &format!("/matches/{id}/join"),
        &json!({"name": "ann", "seat": "a"}),
    );
    let b = post(
        server,
        &format!("/matches/{id}/join"),
        &json!({"name": "bob", "seat": "b"}),
    );
    (a, b)
}

/// The page of a seat (its link carries the token once).
fn seat_url(server: &Server, joined: &Value) -> String {
    format!(
        "http://{}/#match={}&seat={}&token={}",
        server.addr,
        joined["matchId"].as_str().expect("match"),
        joined["seat"].as_str().expect("seat"),
        joined["token"].as_str().expect("token")
    )
}

const LIVE: &str = "document.querySelector('#status') && /seq/.test(document.querySelector('#status').textContent)";

fn text_of(b: &mut Browser, selector: &str) -> String {
    let sel = serde_json::to_string(selector).expect("selector");
    b.eval(&format!(
        "document.querySelector({sel}) ? document.querySelector({sel}).textContent : ''"
    ))
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

fn html(b: &mut Browser) -> String {
    b.eval("document.documentElement.outerHTML")
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_seat_presses_a_button_drags_a_card_and_answers_a_prompt() {
    let (dir, game) = setup("play");
    let server = Server::start(&[game], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    b.screenshot("01-opened");
    assert_eq!(text_of(&mut b, "#counter-score"), "0");

    // Press: the counter changes (the script adds 1).
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '1'",
        "the counter to read 1",
    );
    b.screenshot("02-pressed");

    // Drag the card onto the slot: it snaps there (the slot's position).
    let (x, y) = b.centre("#table [data-id='slot']");
    b.drag("#table [data-id='card']", (x + 12.0, y + 8.0));
    b.wait_for(
        "document.querySelector('#table [data-id=\"card\"]').getAttribute('transform') === 'translate(3 0)' && window.__digipology.frames.length > 0",
        "the card to snap onto the slot",
    );
    let log = text_of(&mut b, "#log");
    assert!(log.contains("entity.dropped"), "{log}");
    b.screenshot("03-dropped");

    // Ask, then answer the prompt in its dialog.
    b.click("#button-ask");
    b.wait_for(
        "!document.querySelector('#prompt').hidden",
        "the prompt dialog",
    );
    assert!(text_of(&mut b, "#prompt").contains("Pick a colour"));
    b.screenshot("04-prompt");
    b.click("#prompt button:not(.default)");
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('picked red')",
        "the answer to reach the table",
    );
    assert!(b.eval("document.querySelector('#prompt').hidden") == json!(true));
    b.screenshot("05-answered");
}

#[test]
fn a_seats_page_never_holds_another_seats_hidden_card() {
    let (dir, game) = setup("canary");
    let server = Server::start(&[game], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let (ann, bob) = both_seats(&server);
    // Bob's page, then Ann's: each holds its own marker, never the other's.
    b.open(&seat_url(&server, &bob), LIVE);
    b.wait_for(
        "document.body.textContent.includes('MARK-B-9c4f')",
        "bob's own card",
    );
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '1'",
        "the press",
    );
    b.open(&seat_url(&server, &ann), LIVE);
    b.wait_for(
        "document.body.textContent.includes('MARK-A-5e1d')",
        "ann's own card",
    );
    // Ann pokes at Bob's hidden card (the page offers nothing; the API
    // refuses), and the page keeps every byte it got in its DOM and state.
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '2'",
        "ann's press",
    );
    let page = html(&mut b);
    let state = b.eval("JSON.stringify(window.__digipology) + JSON.stringify(localStorage)");
    b.screenshot("ann");
    assert!(page.contains("MARK-A-5e1d"));
    assert!(
        !page.contains("MARK-B-9c4f"),
        "ann's page shows bob's hidden card"
    );
    assert!(!state.to_string().contains("MARK-B-9c4f"));
    // The seat switcher (a designer holding both seats) shows each seat's
    // own view: switching to Bob shows his card and drops Ann's.
    b.eval("(() => { const s = document.querySelector('#seat-switcher'); s.value = 'b'; s.dispatchEvent(new Event('change')); })()");
    b.wait_for(
        "document.body.textContent.includes('MARK-B-9c4f')",
        "bob's view",
    );
    b.wait_for(
        "!document.body.textContent.includes('MARK-A-5e1d')",
        "ann's card gone",
    );
    let page = html(&mut b);
    assert!(
        !page.contains("MARK-A-5e1d"),
        "bob's view shows ann's hidden card"
    );
    b.screenshot("bob");
    // A spectator sees neither.
    let id = ann["matchId"].as_str().expect("match");
    b.open(&format!("http://{}/#match={id}&watch=", server.addr), LIVE);
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '2'",
        "the spectator's table",
    );
    let page = html(&mut b);
    assert!(!page.contains("MARK-A-5e1d") && !page.contains("MARK-B-9c4f"));
    b.screenshot("spectator");
}

#[test]
fn a_decision_runs_out_into_the_safe_default() {
    let (dir, _) = setup("expiry");
    let rps = common::root().join("examples/rock-paper-scissors");
    let server = Server::start(&[rps], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let m = post(
        &server,
        "/games/rock-paper-scissors/matches",
        &json!({"bots": ["b"], "match": {"timing": {"decisionLimitMs": 1500,
            "phaseLimits": {"choose": {"ms": 3000, "closure": "ready_or_deadline"}}}}}),
    );
    let id = m["matchId"].as_str().expect("match id");
    let ann = post(
        &server,
        &format!("/matches/{id}/join"),
        &json!({"name": "ann", "seat": "a"}),
    );
    b.open(&seat_url(&server, &ann), LIVE);
    b.wait_for(
        "!document.querySelector('#prompt').hidden",
        "round 1's prompt",
    );
    assert!(text_of(&mut b, "#prompt").contains("Round 1"));
    assert!(text_of(&mut b, "#prompt").contains("rock (default)"));
    b.screenshot("01-prompt");
    // Nobody answers: the decision runs out, the room answers the safe
    // default (rock) for the seat, and round 2 asks again.
    b.wait_for(
        "document.querySelector('#table').textContent.includes('round 1: a rock')",
        "round 1 resolved with the safe default",
    );
    b.wait_for(
        "document.querySelector('#prompt').textContent.includes('Round 2')",
        "round 2's prompt",
    );
    let log = text_of(&mut b, "#log");
    assert!(log.contains("prompt.responded"), "{log}");
    b.screenshot("02-expired");
}

#[test]
fn an_edit_under_watch_changes_the_rule_and_a_broken_one_keeps_the_old() {
    let (dir, game) = setup("watch");
    let server = Server::start(std::slice::from_ref(&game), &dir.join("data"), &["--watch"]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '1'",
        "+1",
    );
    // The designer changes the rule: a press now adds 10.
    std::fs::write(game.join("scripts/main.lua"), script(10)).expect("edit");
    b.wait_for(
        "document.querySelector('#log').textContent.includes('reloaded scripts')",
        "the reload notice",
    );
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '11'",
        "the new rule",
    );
    b.screenshot("01-new-rule");
    // A broken edit: the error shows on the page, the last good code runs.
    std::fs::write(
        game.join("scripts/main.lua"),
        "function on_button_pressed(event)\n  game.entity(\"score\"):add(\n",
    )
    .expect("broken edit");
    b.wait_for("!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent.includes('main.lua')", "the error");
    assert!(text_of(&mut b, "#notice").contains("previous code keeps running"));
    b.click("#button-bump");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '21'",
        "the old code still running",
    );
    b.screenshot("02-broken-edit");
}
