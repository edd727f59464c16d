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
/// onto a slot, a button that asks a prompt, a button its guard keeps
/// shut, and each seat's private hand holding a card whose label is a
/// marker (the canary).
const GAME: &str = r#"{
  "id": "table-test", "name": "Table test", "version": "1.0.0", "kernelVersion": 1,
  "seats": ["a", "b"],
  "entities": [
    { "id": "score", "props": {"label": "Score"}, "components": { "counter": { "value": 0, "min": 0 } } },
    { "id": "bump", "props": {"label": "Bump"}, "components": { "button": {} } },
    { "id": "ask", "props": {"label": "Ask me"}, "components": { "button": {} } },
    { "id": "sure", "props": {"label": "Are you sure"}, "components": { "button": {} } },
    { "id": "count", "props": {"label": "How many"}, "components": { "button": {} } },
    { "id": "boom", "props": {"label": "Boom"}, "components": { "button": {} } },
    { "id": "gate", "props": {"label": "Gate"}, "components": { "button": {} } },
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
  elseif event.data.entityId == "boom" then
    game.entity("score"):add(100)
    error("kaboom")
  elseif event.data.entityId == "ask" then
    ui:prompt(event.data.playerId, "Pick a colour", {{ "red", "blue" }},
      {{ callback = "picked", default = "blue" }})
  elseif event.data.entityId == "sure" then
    ui:confirm(event.data.playerId, "Really?", {{ callback = "picked", default = true }})
  elseif event.data.entityId == "count" then
    ui:number_prompt(event.data.playerId, "How many?", {{ callback = "picked", min = 1, max = 5 }})
  end
end

function can_press(player, button)
  if button.id == "gate" then return false, "the gate is shut" end
  return true
end

function picked(answer, event)
  game.entity("answer"):set_text("picked " .. tostring(answer))
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

/// One test's rig: its folder, the test game's folder, a server and a
/// browser (`None` when no Chromium is installed and none is required).
struct Rig {
    game: PathBuf,
    server: Server,
    b: Browser,
}

/// Starts a server of `examples` (the test game when empty) with `extra`
/// flags, and a browser `size` CSS pixels large, in the test's folder.
fn rig(name: &str, examples: &[&str], extra: &[&str], size: (u32, u32)) -> Option<Rig> {
    let (dir, game) = setup(name);
    let games: Vec<PathBuf> = if examples.is_empty() {
        vec![game.clone()]
    } else {
        examples
            .iter()
            .map(|g| common::root().join("examples").join(g))
            .collect()
    };
    let server = Server::start(&games, &dir.join("data"), extra);
    let b = Browser::start(&dir, size.0, size.1)?;
    Some(Rig { game, server, b })
}

/// A designer's rock-paper-scissors with a bot in seat b and `config`
/// merged onto its match config; Ann's join answer for seat a.
fn rps_as_ann(server: &Server, config: &Value) -> Value {
    let m = post(
        server,
        "/games/rock-paper-scissors/matches",
        &json!({"bots": ["b"], "match": config}),
    );
    let id = m["matchId"].as_str().expect("match id");
    post(
        server,
        &format!("/matches/{id}/join"),
        &json!({"name": "ann", "seat": "a"}),
    )
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

/// Presses the test table's Bump button and waits for the counter to read
/// `n` (`what` names the wait in a failure).
fn bump_to(b: &mut Browser, n: u32, what: &str) {
    b.click("#button-bump");
    b.wait_for(
        &format!("document.querySelector('#counter-score').textContent === '{n}'"),
        what,
    );
}

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
    let Some(Rig { server, mut b, .. }) = rig("play", &[], &[], (1200, 900)) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    b.screenshot("01-opened");
    assert_eq!(text_of(&mut b, "#counter-score"), "0");

    // Press: the counter changes (the script adds 1).
    bump_to(&mut b, 1, "the counter to read 1");
    b.screenshot("02-pressed");

    // Drag the card onto the slot: it snaps there (the slot's position).
    let (x, y) = b.centre("#table [data-id='slot']");
    b.drag("#table [data-id='card']", (x + 12.0, y + 8.0));
    b.wait_for(
        "document.querySelector('#table [data-id=\"card\"]').getAttribute('transform') === 'translate(3 0)' && window.__digipology.frames.length > 0",
        "the card to snap onto the slot",
    );
    let log = text_of(&mut b, "#log");
    assert!(log.contains(" put down card."), "{log}");
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

    // A yes/no prompt (yes is its default) and a number prompt (typed,
    // then Enter).
    b.click("#button-sure");
    b.wait_for(
        "document.querySelector('#prompt').textContent.includes('Really?')",
        "the confirm prompt",
    );
    assert!(text_of(&mut b, "#prompt").contains("yes (default)"));
    b.click("#prompt button:not(.default)");
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('picked false')",
        "no, answered",
    );
    b.click("#button-count");
    b.wait_for(
        "document.querySelector('#prompt input[type=number]')",
        "the number prompt",
    );
    b.eval("document.querySelector('#prompt input').value = '3'");
    b.click("#prompt input");
    b.key("Enter");
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('picked 3')",
        "3, answered with Enter",
    );

    // A press whose script fails: the prediction is taken back, the log
    // marks the rejection and the script error with its file and line,
    // and the table is as it was (the script's +100 rolled back too).
    b.click("#button-boom");
    b.wait_for(
        "[...document.querySelectorAll('#log li.bad')].some((li) => li.textContent.includes('rolled back'))",
        "the press taken back",
    );
    let bad: Vec<String> = serde_json::from_value(b.eval(
        "[...document.querySelectorAll('#log li.bad')].map((li) => `${li.dataset.type} ${li.textContent}`)",
    ))
    .expect("log lines");
    assert!(
        bad.iter().any(|l| l.starts_with("action.rejected")
            && l.contains("button.press was refused (script_error)")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|l| l.starts_with("script.error")
            && l.contains("main.lua:7")
            && l.contains("kaboom")),
        "{bad:?}"
    );
    assert_eq!(text_of(&mut b, "#counter-score"), "1");
    b.screenshot("06-script-error");
}

#[test]
fn a_seats_page_never_holds_another_seats_hidden_card() {
    let Some(Rig { server, mut b, .. }) = rig("canary", &[], &[], (1200, 900)) else {
        return;
    };
    let (ann, bob) = both_seats(&server);
    // Bob's page, then Ann's: each holds its own marker, never the other's.
    b.open(&seat_url(&server, &bob), LIVE);
    b.wait_for(
        "document.body.textContent.includes('MARK-B-9c4f')",
        "bob's own card",
    );
    bump_to(&mut b, 1, "the press");
    b.open(&seat_url(&server, &ann), LIVE);
    b.wait_for(
        "document.body.textContent.includes('MARK-A-5e1d')",
        "ann's own card",
    );
    // Ann pokes at Bob's hidden card (the page offers nothing; the API
    // refuses), and the page keeps every byte it got in its DOM and state.
    bump_to(&mut b, 2, "ann's press");
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
    let Some(Rig { server, mut b, .. }) = rig("expiry", &["rock-paper-scissors"], &[], (1200, 900))
    else {
        return;
    };
    let ann = rps_as_ann(
        &server,
        &json!({"timing": {"decisionLimitMs": 1500,
            "phaseLimits": {"choose": {"ms": 3000, "closure": "ready_or_deadline"}}}}),
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
    assert!(log.contains("answered \"rock\"."), "{log}");
    b.screenshot("02-expired");
}

#[test]
fn an_edit_under_watch_changes_the_rule_and_a_broken_one_keeps_the_old() {
    let Some(Rig {
        game,
        server,
        mut b,
    }) = rig("watch", &[], &["--watch"], (1200, 900))
    else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    bump_to(&mut b, 1, "+1");
    // The designer changes the rule: a press now adds 10.
    std::fs::write(game.join("scripts/main.lua"), script(10)).expect("edit");
    b.wait_for(
        "document.querySelector('#log').textContent.includes('reloaded scripts')",
        "the reload notice",
    );
    bump_to(&mut b, 11, "the new rule");
    b.screenshot("01-new-rule");
    // game.json changes: the table is rebuilt from it and the match's
    // inputs replayed on it — both presses now under the +10 rule.
    let mut g: Value = serde_json::from_str(GAME).expect("game");
    g["entities"]
        .as_array_mut()
        .expect("entities")
        .push(json!({"id": "note", "components": {"text": {"value": "version two"}}}));
    std::fs::write(game.join("game.json"), g.to_string()).expect("game.json edit");
    b.wait_for(
        "document.querySelector('#log').textContent.includes('game.json changed')",
        "the rebuild notice",
    );
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('version two') && document.querySelector('#counter-score').textContent === '20'",
        "the new table with the match replayed on it",
    );
    b.screenshot("02-new-table");
    // A broken edit: the error shows on the page, the last good code runs.
    std::fs::write(
        game.join("scripts/main.lua"),
        "function on_button_pressed(event)\n  game.entity(\"score\"):add(\n",
    )
    .expect("broken edit");
    b.wait_for("!document.querySelector('#notice').hidden && document.querySelector('#notice').textContent.includes('main.lua')", "the error");
    assert!(text_of(&mut b, "#notice").contains("previous code keeps running"));
    bump_to(&mut b, 30, "the old code still running");
    b.screenshot("03-broken-edit");
}

#[test]
fn at_phone_width_everything_is_reachable_from_the_keyboard() {
    let Some(Rig { server, mut b, .. }) = rig("phone", &[], &[], (390, 844)) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    // One column, nothing wider than the screen.
    let fits = b.eval("document.documentElement.scrollWidth <= window.innerWidth");
    assert_eq!(fits, json!(true), "the page is wider than a phone");
    let below = b.eval("document.querySelector('aside').getBoundingClientRect().top >= document.querySelector('#table').getBoundingClientRect().bottom");
    assert_eq!(below, json!(true), "the side panel is not under the table");
    // Tab to the card on the table, flip it with `f`: it shows its back.
    b.tab_to("a.dataset && a.dataset.id === 'card'");
    b.key("f");
    b.wait_for(
        "document.querySelector('#table [data-id=\"card\"] rect.back')",
        "the card face down",
    );
    // Face down it is a card the seat sees under another name, which no
    // legal-action list names: the page still offers to flip it back.
    b.wait_for(
        "!document.querySelector('#table [data-id=\"card\"]') && document.querySelector('#table rect.back')",
        "the server's face-down card",
    );
    b.tab_to("a.closest && a.closest('#table') && a.querySelector('rect.back')");
    b.key("f");
    b.wait_for(
        "document.querySelector('#table [data-id=\"card\"] rect.face') && [...document.querySelectorAll('#log li')].filter((li) => li.dataset.type === 'entity.flipped').length === 2",
        "the card face up again, by the server",
    );
    // Tab to the button, press it with Enter: the counter moves.
    b.tab_to("a.id === 'button-bump'");
    b.key("Enter");
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '1'",
        "the press",
    );
    // The prompt's choices take the focus when it opens.
    b.tab_to("a.id === 'button-ask'");
    b.key("Enter");
    b.wait_for(
        "document.activeElement && document.activeElement.closest('#prompt')",
        "the focus in the prompt",
    );
    b.key("Enter");
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('picked red')",
        "the answer given from the keyboard",
    );
    b.screenshot("phone");
}

#[test]
fn a_finished_match_replays_frame_by_frame() {
    let Some(Rig { server, mut b, .. }) = rig("replay", &["rock-paper-scissors"], &[], (1200, 900))
    else {
        return;
    };
    let ann = rps_as_ann(&server, &json!({}));
    let id = ann["matchId"].as_str().expect("match id").to_owned();
    b.open(&seat_url(&server, &ann), LIVE);
    for round in 1..=3 {
        b.wait_for(
            &format!("document.querySelector('#prompt').textContent.includes('Round {round}')"),
            "the round's prompt",
        );
        b.click("#prompt button:not(.default)");
        b.wait_for(
            &format!(
                "document.querySelector('#table').textContent.includes('round {round}: a paper')"
            ),
            "the round resolved",
        );
    }
    b.wait_for("!document.querySelector('#result').hidden", "the result");
    assert!(
        text_of(&mut b, "#result").contains("a 3"),
        "{}",
        text_of(&mut b, "#result")
    );
    b.screenshot("01-over");
    // The scrubber: the last frame is the end, the first the empty table.
    b.click("header a[href*='replay']");
    b.wait_for(
        "/sequence \\d+ of \\d+/.test(document.querySelector('#scrub-label').textContent)",
        "the scrubber",
    );
    assert!(text_of(&mut b, "#table").contains("game over"));
    b.eval("(() => { const r = document.querySelector('#scrub'); r.value = '0'; r.dispatchEvent(new Event('input')); })()");
    b.wait_for(
        "document.querySelector('#scrub-label').textContent.startsWith('sequence 0 ')",
        "frame 0",
    );
    assert!(!text_of(&mut b, "#table").contains("round 1"));
    // The log as it stood at that frame (the later entries are there,
    // hidden).
    b.wait_for(
        "[...document.querySelectorAll('#log li')].filter((li) => Number(li.dataset.seq) > 5).length > 0",
        "the replay's log",
    );
    let later = b.eval("[...document.querySelectorAll('#log li')].filter((li) => Number(li.dataset.seq) > 0 && !li.hidden).length");
    assert_eq!(later, json!(0));
    b.click("button[aria-label='Next sequence']");
    b.wait_for(
        "document.querySelector('#scrub-label').textContent.startsWith('sequence 1 ')",
        "frame 1",
    );
    b.screenshot("02-frame-1");
    // A page never replays another seat's secrets: the frames are ann's.
    let frame = serving::request(
        &server.addr,
        "GET",
        &format!("/matches/{id}/frames?seq=9"),
        ann["token"].as_str(),
        None,
    )
    .json();
    assert_eq!(frame["observation"]["seat"], json!("a"));
    assert_eq!(frame["seq"], json!(9));
}

/// The examples' tables, for the docs (docs/images/ holds copies).
#[test]
fn example_tables_are_drawn() {
    let examples = ["peek-and-play", "rock-paper-scissors"];
    let Some(Rig { server, mut b, .. }) = rig("examples", &examples, &[], (1200, 820)) else {
        return;
    };
    b.open(
        &format!("http://{}/", server.addr),
        "document.querySelectorAll('.game').length === 2",
    );
    b.screenshot("lobby");
    for game in examples {
        let joined = post(
            &server,
            &format!("/games/{game}/enqueue"),
            &json!({"name": "ann", "bots": true}),
        );
        b.open(&seat_url(&server, &joined), LIVE);
        b.wait_for("document.querySelectorAll('#log li').length > 4", "the log");
        let drawn = b.eval("document.querySelectorAll('#table [data-id], .hcard').length");
        assert!(drawn.as_u64().unwrap_or(0) >= 3, "{game}: {drawn}");
        b.screenshot(game);
    }
}

/// A table of 500 pieces: each press changes it, and the page measures the
/// time from the event's arrival to the redrawn frame (figures written to
/// `frames.json` in the test's folder, docs/performance.md).
#[test]
fn a_table_of_500_pieces_stays_interactive() {
    let (dir, game) = setup("large");
    let mut g: Value = serde_json::from_str(GAME).expect("game");
    let entities = g["entities"].as_array_mut().expect("entities");
    for i in 0..490 {
        let (x, z) = (
            f64::from(i % 35) * 1.8 - 30.0,
            f64::from(i / 35) * 2.6 + 4.0,
        );
        entities.push(json!({"id": format!("c{i:03}"), "tags": ["card"], "props": {"label": format!("{}", i % 13 + 1)},
            "components": {"transform": {"position": {"x": x, "y": 0, "z": z}}, "grabbable": {}, "flippable": {"flipped": i % 3 == 0}}}));
    }
    assert!(entities.len() >= 500);
    std::fs::write(game.join("game.json"), g.to_string()).expect("game.json");
    // Presses as fast as the page answers: above a person's rate limit.
    let server = Server::start(
        &[game],
        &dir.join("data"),
        &["--rate", "1000", "--burst", "1000"],
    );
    let Some(mut b) = Browser::start(&dir, 1280, 900) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    let drawn = b.eval("document.querySelectorAll('#table [data-id]').length");
    assert!(drawn.as_u64().unwrap_or(0) >= 490, "{drawn}");
    b.eval("window.__digipology.frames.length = 0");
    let presses = 40;
    for n in 1..=presses {
        b.click("#button-bump");
        b.wait_for(
            &format!("document.querySelector('#counter-score').textContent === '{n}' && window.__digipology.frames.length >= {n}"),
            "the press redrawn",
        );
    }
    let frames: Vec<f64> =
        serde_json::from_value(b.eval("window.__digipology.frames")).expect("frames");
    assert!(frames.len() >= presses, "{frames:?}");
    let mut sorted = frames.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |pct: usize| sorted[(sorted.len() - 1) * pct / 100];
    let split = b.eval("JSON.stringify({fetchMs: window.__digipology.fetchMs, renderMs: window.__digipology.renderMs})");
    eprintln!("{split}");
    let figures = json!({"pieces": drawn, "events": frames.len(), "medianMs": at(50), "p95Ms": at(95), "maxMs": at(100), "framesMs": frames, "split": split});
    std::fs::write(dir.join("frames.json"), figures.to_string()).expect("figures");
    eprintln!("500-piece table: event to redrawn frame median {:.1} ms, p95 {:.1} ms, max {:.1} ms over {} events",
        at(50), at(95), at(100), frames.len());
    b.screenshot("large");
}

/// The lobby's "Join a match": the page waits for the other seat, then
/// follows the match live (the other seat's press shows on it).
#[test]
fn a_player_who_joins_first_follows_the_match_once_it_starts() {
    let Some(Rig { server, mut b, .. }) = rig("lobby", &[], &[], (1200, 900)) else {
        return;
    };
    b.open(
        &format!("http://{}/", server.addr),
        "document.querySelector('.game')",
    );
    b.click(".game .buttons button");
    b.wait_for(
        "document.querySelector('#status') && document.querySelector('#status').textContent.includes('waiting')",
        "the page waiting for players",
    );
    b.screenshot("01-waiting");
    let bob = post(
        &server,
        "/games/table-test/enqueue",
        &json!({"name": "bob"}),
    );
    b.wait_for(LIVE, "the match to start on the page");
    let press = json!({"clientActionId": "bob-1", "action": {"type": "button.press", "payload": {"entityId": "bump"}}});
    let path = format!(
        "/matches/{}/actions",
        bob["matchId"].as_str().expect("match")
    );
    let r = request(
        &server.addr,
        "POST",
        &path,
        bob["token"].as_str(),
        Some(press.to_string().as_bytes()),
    );
    assert_eq!(r.json()["accepted"], json!(true));
    b.wait_for(
        "document.querySelector('#counter-score').textContent === '1' && document.querySelector('#log').textContent.includes('pressed bump.')",
        "bob's press on ann's page",
    );
    b.screenshot("02-live");
}

/// Marks the first button whose text is `text` (waiting for it) and
/// clicks it with the mouse.
fn click_button(b: &mut Browser, text: &str) {
    let t = serde_json::to_string(text).expect("text");
    b.wait_for(
        &format!("(() => {{ const x = [...document.querySelectorAll('button')].find((x) => x.textContent === {t}); if (x) x.dataset.test = 'this'; return !!x; }})()"),
        &format!("a button {text}"),
    );
    b.click("button[data-test='this']");
}

/// docs/table.md, The lobby: a listed match offers Take seat, then Play
/// as (the seat this browser holds) and Watch; a player's match shows a
/// guard's reason to the seat that tried, and only to it.
#[test]
fn the_lobby_takes_a_seat_plays_it_again_and_watches() {
    let Some(Rig { server, mut b, .. }) = rig("lobby-rows", &[], &[], (1200, 900)) else {
        return;
    };
    post(
        &server,
        "/games/table-test/enqueue",
        &json!({"name": "ann"}),
    );
    let lobby = format!("http://{}/", server.addr);
    b.open(&lobby, "document.querySelector('.game li')");
    click_button(&mut b, "Take seat b");
    b.wait_for(LIVE, "the match to start with this browser in seat b");
    assert!(text_of(&mut b, "#status").starts_with("seat b"));
    bump_to(&mut b, 1, "seat b's press");
    // The guard's reason, in this player's match, to the seat that tried.
    b.click("#button-gate");
    b.wait_for(
        "[...document.querySelectorAll('#log li.bad')].some((li) => li.textContent.includes('guard_denied: the gate is shut'))",
        "the guard's reason on the page",
    );
    b.screenshot("01-seat-b");
    b.open(&lobby, "document.querySelector('.game li button')");
    click_button(&mut b, "Play as b");
    b.wait_for(
        "document.querySelector('#status') && /^seat b · seq/.test(document.querySelector('#status').textContent) && document.querySelector('#counter-score').textContent === '1'",
        "seat b's table again",
    );
    // The page's seat link alone hands seat b to a browser that holds no
    // token, and the token leaves the address once kept.
    let link = b
        .eval("[...document.querySelectorAll('a')].find((a) => a.textContent === 'seat link').href")
        .as_str()
        .expect("a seat link")
        .to_owned();
    assert!(link.contains("token="), "{link}");
    b.eval("localStorage.clear()");
    b.open(&lobby, "document.querySelector('.game')");
    b.open(&link, "document.querySelector('#status') && /^seat b · seq/.test(document.querySelector('#status').textContent)");
    let hash = b.eval("location.hash");
    assert!(
        !hash.as_str().unwrap_or_default().contains("token"),
        "{hash}"
    );
    b.open(&lobby, "document.querySelector('.game li button')");
    click_button(&mut b, "Watch");
    b.wait_for(
        "document.querySelector('#status') && /^watching · seq/.test(document.querySelector('#status').textContent) && document.querySelector('#counter-score').textContent === '1'",
        "the spectators' table",
    );
    let page = html(&mut b);
    assert!(
        !page.contains("MARK-A") && !page.contains("MARK-B"),
        "a spectator saw a hand"
    );
    assert!(
        !page.contains("the gate is shut"),
        "a spectator read the guard's reason"
    );
    b.screenshot("02-watching");
}

/// docs/server.md, Recovery, seen from the table: the server is killed
/// (`kill -9`) and started again on the same address with the page open;
/// the page reconnects by itself, shows the match where it was, and plays
/// on.
#[test]
fn the_page_plays_on_after_the_server_restarts() {
    let (dir, game) = setup("restart");
    // A port of the test's own, free now, so the server can come back on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let games = [game];
    let mut server = Server::start_on(&games, &dir.join("data"), &addr, &[]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    bump_to(&mut b, 1, "the first press");
    server.kill();
    b.wait_for(
        "document.querySelector('#status').textContent.includes('reconnecting')",
        "the page to notice the server is gone",
    );
    let server = Server::start_on(&games, &dir.join("data"), &addr, &[]);
    b.wait_for(LIVE, "the page to reconnect");
    bump_to(&mut b, 2, "a press after the restart");
    b.screenshot("after-restart");
    drop(server);
}

/// docs/table.md: a finger drags a card onto a slot, double-clicking a
/// card on the table flips it, and a deck selected with a click offers
/// Shuffle, which shuffles it.
#[test]
fn a_finger_drags_a_double_click_flips_and_a_deck_shuffles() {
    let (dir, game) = setup("dblclick-deck");
    let basics = common::root().join("examples/basics");
    let server = Server::start(&[game, basics], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 1200, 900) else {
        return;
    };
    let (ann, _) = both_seats(&server);
    b.open(&seat_url(&server, &ann), LIVE);
    // A finger drags the card onto the slot (docs/table.md, Phones).
    let (sx, sy) = b.centre("#table [data-id='slot']");
    b.touch_drag("#table [data-id='card']", (sx + 10.0, sy + 6.0));
    b.wait_for(
        "document.querySelector('#table [data-id=\"card\"]').getAttribute('transform') === 'translate(3 0)'",
        "the card dragged onto the slot with a finger",
    );
    let (x, y) = b.centre("#table [data-id='card']");
    b.double_click(x, y);
    b.wait_for(
        "[...document.querySelectorAll('#log li')].some((li) => li.dataset.type === 'entity.flipped')",
        "the card flipped by a double click",
    );
    let m = post(&server, "/games/basics/matches", &json!({}));
    let id = m["matchId"].as_str().expect("match id");
    let north = post(
        &server,
        &format!("/matches/{id}/join"),
        &json!({"name": "ann", "seat": "north"}),
    );
    post(
        &server,
        &format!("/matches/{id}/join"),
        &json!({"name": "bob", "seat": "south"}),
    );
    b.open(&seat_url(&server, &north), LIVE);
    b.click("#table [data-id='deck']");
    click_button(&mut b, "Shuffle");
    b.wait_for(
        "[...document.querySelectorAll('#log li')].some((li) => li.dataset.type === 'deck.shuffled')",
        "the deck shuffled from its selection",
    );
    b.screenshot("deck-shuffled");
}

/// Tic-tac-toe against the server's bot in the browser: the bot is the
/// game's own `bot(seat, roll)` (docs/server.md), so a drag of x onto
/// the centre gets an o on the board in answer.
#[test]
fn a_person_plays_tic_tac_toe_against_the_games_bot() {
    let Some(Rig { server, mut b, .. }) = rig("ttt", &["tic-tac-toe"], &[], (1200, 900)) else {
        return;
    };
    let ann = post(
        &server,
        "/games/tic-tac-toe/enqueue",
        &json!({"name": "ann", "bots": true}),
    );
    assert_eq!(ann["seat"], json!("x"));
    b.open(&seat_url(&server, &ann), LIVE);
    let (x, y) = b.centre("#table [data-id='cell_5']");
    b.drag("#table [data-id='x1']", (x + 4.0, y + 4.0));
    b.wait_for(
        "document.querySelector('#controls').textContent.includes('x to play') && [...document.querySelectorAll('#log li')].filter((li) => li.dataset.type === 'snap.attached').length === 2",
        "the bot's answer on the board",
    );
    // The log's JSON, on demand, names the bot's o piece.
    b.click("#log-json");
    let log = text_of(&mut b, "#log");
    assert!(log.contains("\"entityId\":\"o"), "an o piece moved: {log}");
    b.screenshot("bot-answered");
}

/// A designer's peek-and-play (examples/peek-and-play) with both seats
/// taken: north's and south's join answers.
fn peek_and_play(server: &Server) -> (Value, Value) {
    let m = post(server, "/games/peek-and-play/matches", &json!({}));
    let id = m["matchId"].as_str().expect("match id").to_owned();
    let north = post(
        server,
        &format!("/matches/{id}/join"),
        &json!({"name": "ann", "seat": "north"}),
    );
    let south = post(
        server,
        &format!("/matches/{id}/join"),
        &json!({"name": "bob", "seat": "south"}),
    );
    (north, south)
}

/// A seat's observation, from the API.
fn observe(server: &Server, joined: &Value) -> Value {
    let id = joined["matchId"].as_str().expect("match");
    let r = request(
        &server.addr,
        "GET",
        &format!("/matches/{id}/observation"),
        joined["token"].as_str(),
        None,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// The items of a container in a seat's view.
fn items(obs: &Value, container: &str) -> Vec<String> {
    serde_json::from_value(
        obs["view"]["entities"][container]["components"]["container"]["items"].clone(),
    )
    .unwrap_or_default()
}

/// The seat answers its open prompt with `response` through the API.
fn answer(server: &Server, joined: &Value, response: &str) {
    let obs = observe(server, joined);
    let a = obs["legalActions"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|a| a["type"] == "prompt.respond" && a["payload"]["response"] == response)
        })
        .cloned()
        .unwrap_or_else(|| panic!("no answer {response} on offer: {obs}"));
    let id = joined["matchId"].as_str().expect("match");
    let body = json!({"clientActionId": format!("api-{}", obs["seq"]), "action": a});
    let r = request(
        &server.addr,
        "POST",
        &format!("/matches/{id}/actions"),
        joined["token"].as_str(),
        Some(body.to_string().as_bytes()),
    );
    assert!(
        r.json()["accepted"] == json!(true),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}

/// docs/table.md, Playing a card: in peek-and-play the game's prompt
/// offers each card of north's hand ("play:c05"); a click on a card
/// plays it, and so does a drag onto the discard pile — the action
/// reaches the server and the card is on the pile. Between turns a
/// click on a card nothing offers gives a hint and sends nothing.
#[test]
fn a_card_in_the_hand_is_played_by_a_click_and_by_a_drag() {
    let Some(Rig { server, mut b, .. }) = rig("hand-play", &["peek-and-play"], &[], (1200, 900))
    else {
        return;
    };
    let (north, south) = peek_and_play(&server);
    b.open(&seat_url(&server, &north), LIVE);
    b.wait_for(
        "document.querySelectorAll('section.mine .hcard.playable').length === 3",
        "north's three playable cards",
    );
    b.screenshot("01-hand");
    // A click plays the first card: it lands on the discard pile.
    let first = b.eval("document.querySelector('section.mine .hcard.playable').dataset.id");
    let first = first.as_str().expect("a card id").to_owned();
    b.click(&format!("section.mine .hcard[data-id='{first}']"));
    b.wait_for(
        &format!("document.querySelector('[data-container=\"discard\"] .hcard[data-id=\"{first}\"]') && !document.querySelector('section.mine .hcard[data-id=\"{first}\"]')"),
        "the clicked card on the discard pile",
    );
    let obs = observe(&server, &north);
    assert_eq!(items(&obs, "discard"), vec![first.clone()]);
    assert!(!items(&obs, "hand_north").contains(&first));
    b.screenshot("02-clicked");

    // South's move: north's cards are on offer to nothing now. A click
    // gives a hint and sends nothing.
    b.wait_for(
        "document.querySelectorAll('section.mine .hcard.playable').length === 0 && document.querySelectorAll('section.mine .hcard').length === 2",
        "north's cards not playable on south's turn",
    );
    let seq = observe(&server, &north)["seq"].clone();
    b.click("section.mine .hcard");
    b.wait_for(
        "!document.querySelector('#hand-hint').hidden && /nothing on offer/.test(document.querySelector('#hand-hint').textContent)",
        "the hint",
    );
    assert!(b.eval("document.querySelector('#play-menu')").is_null());
    assert_eq!(
        observe(&server, &north)["seq"],
        seq,
        "the click sent nothing"
    );

    // South peeks; north drags a card onto the discard pile.
    answer(&server, &south, "peek");
    b.wait_for(
        "document.querySelectorAll('section.mine .hcard.playable').length === 2",
        "north's turn again",
    );
    let second = b.eval("document.querySelector('section.mine .hcard.playable').dataset.id");
    let second = second.as_str().expect("a card id").to_owned();
    let pile = b.centre("[data-container='discard']");
    b.drag(&format!("section.mine .hcard[data-id='{second}']"), pile);
    b.wait_for(
        &format!(
            "document.querySelector('[data-container=\"discard\"] .hcard[data-id=\"{second}\"]')"
        ),
        "the dragged card on the discard pile",
    );
    assert_eq!(
        items(&observe(&server, &north), "discard"),
        vec![first, second]
    );
    assert!(
        b.eval("document.querySelector('.hcard.lifting')").is_null(),
        "the dragged copy is gone"
    );
    b.screenshot("03-dragged");
}

/// A game whose prompt offers each of two cards to two piles ("c1 to
/// left", "c1 to right", …) and never the third.
const PILES: &str = r#"{
  "id": "piles", "name": "Piles", "version": "1.0.0", "kernelVersion": 1,
  "seats": ["a", "b"],
  "entities": [
    { "id": "hand_a", "components": { "container": { "visibility": "private", "owner": "a", "items": ["c1", "c2", "c3"] } } },
    { "id": "left", "components": { "container": {} } },
    { "id": "right", "components": { "container": {} } },
    { "id": "c1", "props": {"label": "Ace"}, "components": { "flippable": {} } },
    { "id": "c2", "props": {"label": "Two"}, "components": { "flippable": {} } },
    { "id": "c3", "props": {"label": "Three"}, "components": { "flippable": {} } }
  ],
  "scripts": [ { "id": "main", "file": "scripts/main.lua", "bindings": [{ "id": "global" }] } ]
}"#;

const PILES_LUA: &str = r#"local function ask()
  local choices = {}
  for _, c in ipairs(game.entity("hand_a"):items()) do
    if c.id ~= "c3" then
      choices[#choices + 1] = c.id .. " to left"
      choices[#choices + 1] = c.id .. " to right"
    end
  end
  choices[#choices + 1] = "pass"
  ui:prompt(game.seat("a"), "Where?", choices, { callback = "put", default = "pass" })
end

function on_seat_assigned(event)
  if storage.started or not (game.seat("a") and game.seat("b")) then return end
  storage.started = true
  ask()
end

function put(answer, event)
  if answer ~= "pass" then
    local id, pile = string.match(answer, "^(%S+) to (%S+)$")
    game.entity(id):move_to(game.entity(pile))
  end
  ask()
end
"#;

/// docs/table.md, Playing a card: a card several offers name opens a
/// menu of them; a drag onto a pile one of them names plays that one at
/// once; a card nothing names gives a hint.
#[test]
fn a_card_with_several_plays_asks_which_and_a_drop_onto_a_pile_chooses() {
    let (dir, _) = setup("hand-menu");
    let game = dir.join("piles");
    std::fs::create_dir_all(game.join("scripts")).expect("game folder");
    std::fs::write(game.join("game.json"), PILES).expect("game.json");
    std::fs::write(game.join("scripts/main.lua"), PILES_LUA).expect("script");
    let server = Server::start(&[game], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 1000, 800) else {
        return;
    };
    let m = post(&server, "/games/piles/matches", &json!({}));
    let id = m["matchId"].as_str().expect("match id");
    let a = post(
        &server,
        &format!("/matches/{id}/join"),
        &json!({"seat": "a"}),
    );
    post(
        &server,
        &format!("/matches/{id}/join"),
        &json!({"seat": "b"}),
    );
    b.open(&seat_url(&server, &a), LIVE);
    b.wait_for(
        "document.querySelectorAll('section.mine .hcard.playable').length === 2",
        "two playable cards",
    );
    assert_eq!(
        b.eval("document.querySelector('.hcard[data-id=\"c3\"]').classList.contains('playable')"),
        json!(false)
    );
    // The third card: a hint, nothing sent.
    b.click(".hcard[data-id='c3']");
    b.wait_for("!document.querySelector('#hand-hint').hidden", "the hint");
    assert!(b.eval("document.querySelector('#play-menu')").is_null());
    // The first: a menu of its two plays (and Cancel).
    b.click(".hcard[data-id='c1']");
    b.wait_for("document.querySelector('#play-menu')", "the menu");
    let labels =
        b.eval("[...document.querySelectorAll('#play-menu button')].map((x) => x.textContent)");
    assert_eq!(labels, json!(["c1 to left", "c1 to right", "Cancel"]));
    // The menu covers no card of the hand.
    let clear = b.eval("(() => { const m = document.querySelector('#play-menu').getBoundingClientRect(); return [...document.querySelectorAll('section.mine .hcard')].every((c) => { const r = c.getBoundingClientRect(); return r.bottom <= m.top || r.top >= m.bottom || r.right <= m.left || r.left >= m.right; }); })()");
    assert_eq!(clear, json!(true), "the menu covers a card");
    b.screenshot("01-menu");
    // A press elsewhere closes it, and sends nothing; then pick a play.
    let seq = observe(&server, &a)["seq"].clone();
    b.click("section.mine h2");
    b.wait_for("!document.querySelector('#play-menu')", "the menu closed");
    assert_eq!(
        observe(&server, &a)["seq"],
        seq,
        "closing the menu sent nothing"
    );
    b.click(".hcard[data-id='c1']");
    b.wait_for("document.querySelector('#play-menu')", "the menu again");
    click_button(&mut b, "c1 to right");
    b.wait_for(
        "document.querySelector('[data-container=\"right\"] .hcard[data-id=\"c1\"]') && !document.querySelector('#play-menu')",
        "c1 on the right pile",
    );
    // The second, dragged onto the left pile: that play, no menu.
    b.wait_for(
        "document.querySelector('.hcard.playable[data-id=\"c2\"]')",
        "c2 on offer",
    );
    let left = b.centre("[data-container='left']");
    b.drag(".hcard[data-id='c2']", left);
    b.wait_for(
        "document.querySelector('[data-container=\"left\"] .hcard[data-id=\"c2\"]')",
        "c2 on the left pile",
    );
    assert!(b.eval("document.querySelector('#play-menu')").is_null());
    let obs = observe(&server, &a);
    assert_eq!(items(&obs, "left"), vec!["c2"]);
    assert_eq!(items(&obs, "right"), vec!["c1"]);
    assert_eq!(items(&obs, "hand_a"), vec!["c3"]);
    b.screenshot("02-played");
}

/// docs/table.md: the prompt never covers the hand — at a phone's, a
/// phone on its side, a small laptop's and a common screen's size every card of the seat's
/// hand, scrolled into view, is what a click at its centre reaches, and
/// none overlaps the open prompt: in peek-and-play (a small table) and
/// on the test table (a tall one, the hand below it).
#[test]
fn a_prompt_never_covers_the_hand() {
    let (dir, game) = setup("prompt-hand");
    let peek = common::root().join("examples/peek-and-play");
    let server = Server::start(&[game, peek], &dir.join("data"), &[]);
    let Some(mut b) = Browser::start(&dir, 390, 640) else {
        return;
    };
    let (north, _) = peek_and_play(&server);
    let (ann, _) = both_seats(&server);
    // Each card scrolled to the top, the middle and the bottom of the
    // window (where a prompt pinned to the window's edge would lie).
    let uncovered = "(() => [...document.querySelectorAll('section.mine .hcard')].every((c) => ['start', 'center', 'end'].every((block) => {
        c.scrollIntoView({ block });
        const r = c.getBoundingClientRect();
        const p = document.querySelector('#prompt').getBoundingClientRect();
        const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        const apart = r.bottom <= p.top || r.top >= p.bottom || r.right <= p.left || r.left >= p.right;
        return !!hit && hit.closest('.hcard') === c && apart;
      })))()";
    for (w, h) in [(390, 640), (640, 360), (1024, 600), (1280, 720)] {
        b.resize(w, h);
        b.open(&seat_url(&server, &north), LIVE);
        b.wait_for(
            "!document.querySelector('#prompt').hidden && document.querySelectorAll('section.mine .hcard').length === 3",
            "the prompt and the hand",
        );
        b.screenshot(&format!("peek-{w}x{h}"));
        assert_eq!(
            b.eval(uncovered),
            json!(true),
            "at {w}x{h} the prompt covers the hand"
        );
        // The test table: its prompt opens from a button.
        b.open(&seat_url(&server, &ann), LIVE);
        b.wait_for("document.querySelector('#button-ask')", "the ask button");
        b.eval("document.querySelector('#button-ask').scrollIntoView({ block: 'center' })");
        b.click("#button-ask");
        b.wait_for(
            "!document.querySelector('#prompt').hidden && document.querySelector('section.mine .hcard')",
            "the test table's prompt",
        );
        b.screenshot(&format!("table-{w}x{h}"));
        assert_eq!(
            b.eval(uncovered),
            json!(true),
            "at {w}x{h} the prompt covers the test table's hand"
        );
        b.eval("document.querySelector('#prompt button').scrollIntoView({ block: 'center' })");
        click_button(&mut b, "red");
        b.wait_for("document.querySelector('#prompt').hidden", "the answer");
    }
    // With a small table the prompt and the hand are in view together,
    // unscrolled.
    b.open(&seat_url(&server, &north), LIVE);
    b.wait_for(
        "!document.querySelector('#prompt').hidden && document.querySelectorAll('section.mine .hcard').length === 3",
        "the prompt and the hand",
    );
    let both = b.eval("(() => { window.scrollTo(0, 0); const last = [...document.querySelectorAll('section.mine .hcard')].pop().getBoundingClientRect(); const p = document.querySelector('#prompt').getBoundingClientRect(); return p.top >= 0 && last.bottom <= window.innerHeight; })()");
    assert_eq!(
        both,
        json!(true),
        "the prompt and the hand are not in view together at 1280x720"
    );
}

/// docs/table.md, Events: the log reads as sentences — the server's,
/// made from the seat's own events, the same `digipology run --format
/// text` prints — and shows an event's JSON on demand, one line or all.
#[test]
fn the_log_reads_as_sentences_with_the_json_on_demand() {
    let Some(Rig { server, mut b, .. }) =
        rig("log-sentences", &["peek-and-play"], &[], (1200, 900))
    else {
        return;
    };
    let (north, _) = peek_and_play(&server);
    b.open(&seat_url(&server, &north), LIVE);
    b.wait_for(
        "document.querySelector('#log li[data-type=\"deck.dealt\"]') && document.querySelectorAll('section.mine .hcard').length === 3",
        "the deal in the log",
    );
    let dealt = text_of(&mut b, "#log li[data-type='deck.dealt']");
    let mine: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('section.mine .hcard')].map((c) => c.dataset.id)"),
    )
    .expect("ids");
    // North reads its own three cards and three hidden ones.
    let (head, named) = dealt.split_once(": ").expect("a sentence naming cards");
    assert!(
        head.ends_with("draw_pile dealt 3 cards each to hand_north and hand_south"),
        "{dealt}"
    );
    let named = named
        .strip_suffix(" and 3 hidden cards.")
        .unwrap_or_else(|| panic!("{dealt}"));
    let mut named: Vec<&str> = named.split(", ").collect();
    let mut mine: Vec<&str> = mine.iter().map(String::as_str).collect();
    named.sort_unstable();
    mine.sort_unstable();
    assert_eq!(named, mine, "{dealt}");
    // Sentences, no JSON, until asked.
    let shown = b.eval("document.querySelector('#log').innerText");
    let shown = shown.as_str().unwrap_or_default();
    assert!(!shown.contains("{\""), "{shown}");
    assert!(shown.contains("The game started."), "{shown}");
    assert!(
        shown.contains("is asked \"Your move\": one of \"play:"),
        "{shown}"
    );
    // Each line's sentence is the server's sentence of the line's JSON.
    b.click("#log li[data-type='deck.dealt']");
    b.wait_for(
        "document.querySelector('#log li[data-type=\"deck.dealt\"] pre.raw')",
        "the line's JSON",
    );
    let raw = text_of(&mut b, "#log li[data-type='deck.dealt'] pre.raw");
    let event: Value = serde_json::from_str(&raw).expect("the line's JSON");
    assert_eq!(event["type"], "deck.dealt");
    assert!(event.get("text").is_none(), "{raw}");
    assert_eq!(
        event["data"]["entityIds"]
            .as_array()
            .map(|l| l.iter().filter(|x| x.is_null()).count()),
        Some(3),
        "south's cards are hidden from north: {raw}"
    );
    assert!(
        dealt.ends_with(&digipology_room::sentence::sentence(&event)),
        "{dealt}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#log pre.raw').length"),
        json!(1)
    );
    b.click("#log li[data-type='deck.dealt']");
    b.wait_for(
        "!document.querySelector('#log pre.raw')",
        "the JSON hidden again",
    );
    // The whole log's JSON, then none.
    b.click("#log-json");
    b.wait_for(
        "[...document.querySelectorAll('#log li[data-seq]')].every((li) => li.querySelector('pre.raw'))",
        "every line's JSON",
    );
    b.screenshot("json");
    b.click("#log-json");
    b.wait_for("!document.querySelector('#log pre.raw')", "the JSON hidden");

    // The stream the page reads: each line the seat's event, byte for
    // byte, with its sentence last.
    let id = north["matchId"].as_str().expect("match");
    let token = north["token"].as_str();
    let read = |q: &str| {
        let r = request(
            &server.addr,
            "GET",
            &format!("/matches/{id}/events?follow=false{q}"),
            token,
            None,
        );
        assert_eq!(r.status, 200);
        String::from_utf8_lossy(&r.body)
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let plain = read("");
    let said = read("&text=true");
    assert_eq!(plain.len(), said.len());
    assert!(plain.len() > 5, "{plain:?}");
    for (p, s) in plain.iter().zip(&said) {
        let event: Value = serde_json::from_str(p).expect("event");
        let text =
            serde_json::to_string(&digipology_room::sentence::sentence(&event)).expect("json");
        assert_eq!(
            *s,
            format!("{},\"text\":{text}}}", &p[..p.len() - 1]),
            "{p}"
        );
        assert!(!p.contains("\"text\""), "{p}");
    }
}

/// docs/table.md, A screenshot of a seat's page: the documented command
/// line, run as written against a live match, writes a PNG of the
/// window's size; the same line with `--dump-dom` shows what it
/// pictured — the seat's hand, on offer, and the log's sentences. And
/// the card size the doc gives is the page's.
#[test]
fn the_documented_screenshot_command_pictures_a_seats_page() {
    let doc = std::fs::read_to_string(common::root().join("docs/table.md")).expect("table.md");
    let page =
        std::fs::read_to_string(common::root().join("server/src/page/table.js")).expect("table.js");
    assert!(
        page.contains("const CARD = { w: 1.6, h: 2.2 };"),
        "the page's card size changed: update docs/table.md"
    );
    assert!(
        doc.contains("| a card, a deck or a pile on the table | 1.6 × 2.2 |"),
        "docs/table.md gives the card's size"
    );
    let section = doc
        .split("## A screenshot of a seat's page")
        .nth(1)
        .expect("the section");
    let line = section
        .lines()
        .find(|l| l.starts_with("chromium --headless"))
        .expect("the command line")
        .to_owned();
    let chromium = std::path::Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        assert!(
            std::env::var("DIGIPOLOGY_BROWSER_TESTS").as_deref() != Ok("required"),
            "no Chromium at /usr/bin/chromium (apt-get install chromium)"
        );
        eprintln!("browser test skipped: no Chromium (apt-get install chromium)");
        return;
    }
    let (dir, _) = setup("screenshot-doc");
    let server = Server::start(
        &[common::root().join("examples/peek-and-play")],
        &dir.join("data"),
        &[],
    );
    let (north, _) = peek_and_play(&server);
    let profile = dir.join("profile");
    let concrete = line
        .replace("http://127.0.0.1:7878", &format!("http://{}", server.addr))
        .replace("MATCH", north["matchId"].as_str().expect("match"))
        .replace("TOKEN", north["token"].as_str().expect("token"))
        .replace("/tmp/digipology-shot", profile.to_str().expect("path"));
    let shell = |command: &str| {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&dir)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{command}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    shell(&concrete);
    let png = std::fs::read(dir.join("north.png")).expect("the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!((size(16), size(20)), (1280, 800), "the window's size");
    // What it pictured: the page as it stood when the picture was taken.
    let _ = std::fs::remove_dir_all(&profile);
    let dom = shell(&concrete.replace("--screenshot=north.png", "--dump-dom"));
    assert!(dom.contains("(still)"), "a still picture: {dom}");
    assert_eq!(
        dom.matches("hcard playable").count(),
        3,
        "north's hand on offer: {dom}"
    );
    assert!(dom.contains("The game started."), "the log: {dom}");
    assert!(dom.contains("and 3 hidden cards."), "the deal: {dom}");
}
