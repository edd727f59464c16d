//! The room service against a real server on a loopback port
//! (docs/server.md): two seats play a match to its result over HTTP, a
//! token acts only for its own seat, a late action meets the safe default
//! first, a dropped stream resumes with nothing missed, the canary never
//! reaches a seat that may not see it.

mod common;
#[path = "common/serving.rs"]
mod serving;

use common::{root, scratch};
use serde_json::{json, Value};
use serving::{get_json, request, Client, Server};

fn rps() -> std::path::PathBuf {
    root().join("examples/rock-paper-scissors")
}

/// Plays the first legal action of every acting seat until the match has
/// a result; returns the number of actions sent.
fn play_out(seats: &mut [Client]) -> usize {
    let mut sent = 0;
    for _ in 0..200 {
        let mut over = false;
        for c in seats.iter_mut() {
            let obs = c.observe(None);
            if obs["result"]["status"] == "match_over" {
                over = true;
                break;
            }
            if obs["participation"] == "acting" {
                if let Some(a) = obs["legalActions"].as_array().and_then(|l| l.first()) {
                    let answer = c.act(a);
                    assert!(answer["seq"].is_u64(), "{answer}");
                    sent += 1;
                }
            }
        }
        if over {
            return sent;
        }
    }
    panic!("the match did not end");
}

/// Must show (issue 19): two seats play a full example match over HTTP to
/// `match_over`; the result reaches the finished list and the leaderboard.
#[test]
fn two_seats_play_rock_paper_scissors_to_match_over() {
    let data = scratch("server-full-match");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let ann = Client::enqueue(&server.addr, "rock-paper-scissors", "ann");
    let bob = Client::enqueue(&server.addr, "rock-paper-scissors", "bob");
    assert_eq!(
        ann.match_id, bob.match_id,
        "the second player fills the first's match"
    );
    assert_ne!(ann.seat, bob.seat);
    let match_id = ann.match_id.clone();
    // Observations read the clocks now, not at the last action.
    let mut ann = ann;
    let before = ann.observe(None)["clocks"]["now"].as_i64().expect("now");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let later = ann.observe(None);
    assert!(
        later["clocks"]["now"].as_i64().expect("now") >= before + 300,
        "{later}"
    );
    let mut seats = [ann, bob];
    let sent = play_out(&mut seats);
    assert!(sent >= 6, "three rounds of two choices: {sent}");
    let [mut ann, _bob] = seats;
    // The stream carries the result, then ends.
    let messages = ann.stream(None, |_| false);
    let events: Vec<Value> = messages.iter().flat_map(|m| m.events()).collect();
    assert!(
        events.iter().any(|e| e["type"] == "match.over"),
        "{events:?}"
    );
    assert_eq!(messages.last().map(|m| m.event.as_str()), Some("over"));
    let mut spectator = Client::spectator(&server.addr, &match_id);
    assert_eq!(spectator.observe(None)["result"]["status"], "match_over");
    let finished = request(
        &server.addr,
        "GET",
        "/games/rock-paper-scissors/matches?status=finished",
        None,
        None,
    )
    .json();
    assert_eq!(finished[0]["matchId"], json!(match_id));
    assert_eq!(finished[0]["result"]["status"], "match_over");
    let board = get_json(&server.addr, "/games/rock-paper-scissors/leaderboard");
    let names: Vec<&str> = board["standings"]
        .as_array()
        .expect("standings")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"ann") && names.contains(&"bob"), "{board}");
    for row in board["standings"].as_array().expect("rows") {
        assert_eq!(row["played"], 1, "{row}");
    }
}

/// Must show (issue 19): a token cannot act for another seat or another
/// match, a spectator cannot act, and none of the refusals changes the
/// room.
#[test]
fn a_token_acts_only_for_its_own_seat_in_its_own_match() {
    let data = scratch("server-tokens");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let mut ann = Client::enqueue(&server.addr, "rock-paper-scissors", "ann");
    let bob = Client::enqueue(&server.addr, "rock-paper-scissors", "bob");
    let carl = Client::enqueue(&server.addr, "rock-paper-scissors", "carl");
    let _dee = Client::enqueue(&server.addr, "rock-paper-scissors", "dee");
    assert_ne!(carl.match_id, ann.match_id);
    let before = ann.observe(None)["seq"].clone();
    let respond = json!({"type": "prompt.respond", "payload": {"promptId": "prompt_4_1", "response": "rock"}});
    let body = |action: &Value| json!({"clientActionId": "x1", "action": action}).to_string();
    let cases: Vec<(String, Option<&str>, Value, u16, &str)> = vec![
        // Another match's token.
        (
            carl.match_id.clone(),
            ann.token.as_deref(),
            respond.clone(),
            403,
            "wrong_match",
        ),
        (
            ann.match_id.clone(),
            carl.token.as_deref(),
            respond.clone(),
            403,
            "wrong_match",
        ),
        // No token (a spectator) and a made-up one.
        (
            ann.match_id.clone(),
            None,
            respond.clone(),
            401,
            "missing_token",
        ),
        (
            ann.match_id.clone(),
            Some("0123456789abcdef"),
            respond.clone(),
            401,
            "unknown_token",
        ),
        // Acting as the other seat's player, as the system, as a script.
        (
            ann.match_id.clone(),
            ann.token.as_deref(),
            json!({"type": "prompt.respond", "source": {"kind": "player", "playerId": "p2"},
                "payload": {"promptId": "prompt_4_2", "response": "rock"}}),
            403,
            "forged_source",
        ),
        (
            ann.match_id.clone(),
            ann.token.as_deref(),
            json!({"type": "counter.add", "source": {"kind": "system"}, "payload": {"entityId": "score_a", "amount": 5}}),
            403,
            "forged_source",
        ),
        (
            ann.match_id.clone(),
            ann.token.as_deref(),
            json!({"type": "counter.add", "source": {"kind": "script", "scriptId": "main", "bindingId": "global"},
                "payload": {"entityId": "score_a", "amount": 5}}),
            403,
            "forged_source",
        ),
        // A system-only action.
        (
            ann.match_id.clone(),
            ann.token.as_deref(),
            json!({"type": "match.finish", "payload": {"scores": {"a": 1, "b": 0}}}),
            403,
            "not_a_player_action",
        ),
        (
            ann.match_id.clone(),
            bob.token.as_deref(),
            json!({"type": "system.player_removed", "payload": {"playerId": "p1"}}),
            403,
            "not_a_player_action",
        ),
    ];
    for (match_id, token, action, status, code) in cases {
        let path = format!("/matches/{match_id}/actions");
        let r = request(
            &server.addr,
            "POST",
            &path,
            token,
            Some(body(&action).as_bytes()),
        );
        assert_eq!(
            r.status,
            status,
            "{action}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["code"], code, "{action}");
    }
    // The seat's own observation asks a token too; another match's is refused.
    let other = format!("/matches/{}/observation", carl.match_id);
    assert_eq!(
        request(&server.addr, "GET", &other, ann.token.as_deref(), None).status,
        403
    );
    let own = format!("/matches/{}/observation", ann.match_id);
    assert_eq!(request(&server.addr, "GET", &own, None, None).status, 401);
    assert_eq!(
        ann.observe(None)["seq"],
        before,
        "no refusal reached the room"
    );
}

/// A designer's match of rock-paper-scissors made with `body`; its id.
fn designer_match(addr: &str, body: &Value) -> String {
    designer_match_of(addr, "rock-paper-scissors", body)
}

/// A designer's match of `game` made with `body`; its id.
fn designer_match_of(addr: &str, game: &str, body: &Value) -> String {
    let made = request(
        addr,
        "POST",
        &format!("/games/{game}/matches"),
        None,
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(made.status, 201, "{}", String::from_utf8_lossy(&made.body));
    made.json()["matchId"].as_str().expect("id").to_owned()
}

/// The RPS match config with a short decision limit.
fn short_decisions(ms: u64) -> Value {
    let game: Value =
        serde_json::from_str(&std::fs::read_to_string(rps().join("game.json")).expect("game.json"))
            .expect("JSON");
    let mut config = game["match"].clone();
    config["timing"]["decisionLimitMs"] = json!(ms);
    config["timing"]["phaseLimits"]["choose"]["ms"] = json!(600_000);
    config
}

/// Must show (issue 19): an action that arrives after its seat's decision
/// expired meets the safe default first: the expiry and the default are
/// in the stream before it, under earlier sequences.
#[test]
fn a_late_action_after_a_decision_expiry_meets_the_safe_default_first() {
    let data = scratch("server-late");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let match_id = designer_match(
        &server.addr,
        &json!({"seed": 7, "match": short_decisions(2000)}),
    );
    let mut ann = Client::join(&server.addr, &match_id, "ann");
    let mut bob = Client::join(&server.addr, &match_id, "bob");
    let obs = bob.observe(None);
    let prompt = obs["legalActions"][0]["payload"]["promptId"].clone();
    // Ann answers at once (well within 2 s, even on a busy machine); Bob's
    // answer comes well after his 2 s.
    let first = ann.observe(None)["legalActions"][0].clone();
    ann.act(&first);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let late = bob.act(
        &json!({"type": "prompt.respond", "payload": {"promptId": prompt, "response": "paper"}}),
    );
    let late_seq = late["seq"].as_u64().expect("seq");
    let events: Vec<Value> = bob
        .stream(None, |m| m.id.is_some_and(|id| id >= late_seq))
        .iter()
        .flat_map(|m| m.events())
        .collect();
    let seq_of =
        |f: &dyn Fn(&Value) -> bool| events.iter().find(|e| f(e)).and_then(|e| e["seq"].as_u64());
    let expired = seq_of(&|e| {
        e["type"] == "match.host_event"
            && e["data"]["kind"] == "decision_expired"
            && e["data"]["seat"] == json!(bob.seat)
    })
    .expect("the decision expired");
    let default = seq_of(&|e| {
        e["type"] == "prompt.responded"
            && e["data"]["promptId"] == prompt
            && e["data"]["playerId"] == "p2"
    })
    .expect("the safe default answered Bob's prompt");
    assert!(
        expired < default && default < late_seq,
        "{expired} {default} {late_seq}"
    );
    assert_eq!(
        late["accepted"], false,
        "the prompt was answered already: {late}"
    );
}

/// docs/server.md, Disconnects: a stream that drops and comes back within
/// the grace resumes from its last id with nothing missed or repeated; one
/// that stays away past it gets its player disconnected in the stream.
#[test]
fn a_dropped_stream_resumes_and_a_long_absence_disconnects() {
    let data = scratch("server-grace");
    let server = Server::start(&[rps()], &data.join("d"), &["--grace-ms", "4000"]);
    let mut ann = Client::enqueue(&server.addr, "rock-paper-scissors", "ann");
    let mut bob = Client::enqueue(&server.addr, "rock-paper-scissors", "bob");
    let first = ann.stream(None, |m| m.id == Some(2));
    let last = first.last().and_then(|m| m.id).expect("ids");
    // Ann comes back at once and plays; Bob's stream drops for good.
    let _bob_first = bob.stream(None, |m| m.id == Some(2));
    let choice = ann.observe(None)["legalActions"][0].clone();
    let played = ann.act(&choice)["seq"].as_u64().expect("seq");
    let resumed = ann.stream(Some(last), |m| m.id.is_some_and(|id| id >= played));
    let ids: Vec<u64> = resumed.iter().filter_map(|m| m.id).collect();
    assert_eq!(ids.first(), Some(&(last + 1)), "nothing missed: {ids:?}");
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "nothing repeated: {ids:?}"
    );
    // Ann keeps a stream open while Bob stays away past his grace (4 s;
    // Ann's own reconnects above took far less).
    let mut watcher = ann.clone();
    let after: Vec<Value> = std::thread::spawn(move || {
        watcher
            .stream(Some(played), |m| {
                m.events()
                    .iter()
                    .any(|e| e["type"] == "player.disconnected")
            })
            .iter()
            .flat_map(|m| m.events())
            .collect()
    })
    .join()
    .expect("watcher");
    let gone: Vec<&Value> = after
        .iter()
        .filter(|e| e["type"] == "player.disconnected")
        .collect();
    assert_eq!(gone.len(), 1, "{after:?}");
    assert_eq!(
        gone[0]["data"]["playerId"], "p2",
        "Bob, not Ann, whose stream stayed open"
    );
}

/// A game whose secrets are markers: each seat's private hand holds cards
/// marked `CANARY-N…` / `CANARY-S…`, the hidden pile `CANARY-P…`; and
/// each card's id is a marker too (`ID-N1`, `ID-P2`, …). The bell
/// shuffles the pile and prompts the ringer with their own first card's
/// marker and the pile's ids, offering the pile's top card as a choice;
/// the `oops` button fails with the pile's and the south hand's markers in
/// its error message; the `gate` button's guard refuses it with the
/// presser's own first card's marker and id and the pile's ids in its
/// reason; `can_act` refuses every flip naming every card; `observe`,
/// `public_view` and the sensing tool `peek` name cards by id (docs/
/// observations.md, Text a game writes).
fn canary_game(dir: &std::path::Path) -> std::path::PathBuf {
    let game = dir.join("canary");
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let card = |mark: &str| json!({"id": format!("ID-{mark}"), "props": {"secret": format!("CANARY-{mark}")}});
    let mut entities = vec![
        json!({"id": "pile", "components": {"deck": {}, "container": {"visibility": "hidden", "items": ["ID-P1", "ID-P2", "ID-P3"]}}}),
        json!({"id": "hand_north", "components": {"container": {"visibility": "private", "owner": "north", "items": ["ID-N1", "ID-N2"]}}}),
        json!({"id": "hand_south", "components": {"container": {"visibility": "private", "owner": "south", "items": ["ID-S1", "ID-S2"]}}}),
        json!({"id": "bell", "components": {"button": {}}}),
        json!({"id": "oops", "components": {"button": {}}}),
        json!({"id": "gate", "components": {"button": {}}}),
    ];
    for mark in ["P1", "P2", "P3", "N1", "N2", "S1", "S2"] {
        entities.push(card(mark));
    }
    let manifest = json!({
        "id": "canary", "name": "Canary", "version": "1.0.0", "kernelVersion": 1,
        "seats": ["north", "south"], "entities": entities,
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null, "clockVisibility": "private"},
                  "resources": {"hints": {"amount": 1000, "reset": "match", "visibility": "private"}},
                  "sensing": {"peek": {"resource": "hints", "cost": 1}}}
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(
        game.join("scripts/main.lua"),
        r#"
local function ids(c)
  local out = {}
  for _, e in ipairs(game.entity(c):items()) do out[#out + 1] = e.id end
  return out
end
local function names(c) return table.concat(ids(c), " ") end
local function other(seat) return seat == "north" and "south" or "north" end
function on_button_pressed(event)
  if event.data.entityId == "bell" then
    storage.rings = (storage.rings or 0) + 1
    game.entity("pile"):shuffle()
    local seat = event.data.playerId == game.seat("north") and "north" or "south"
    local first = game.entity("hand_" .. seat):items()[1]
    ui:prompt(event.data.playerId, "Yours: " .. first.props.secret .. "; the pile: " .. names("pile"),
      {"ok", "fine", ids("pile")[1]}, { default = "ok" })
  elseif event.data.entityId == "oops" then
    error("leaked " .. game.entity("pile"):items()[1].props.secret .. " " .. game.entity("hand_south"):items()[1].props.secret)
  end
end
function can_press(player, button)
  if button.id ~= "gate" then return true end
  local first = game.entity("hand_" .. game.seat_of(player)):items()[1]
  return false, "closed; you hold " .. (first and (first.props.secret .. " (" .. first.id .. ")") or "nothing")
    .. "; the pile holds " .. names("pile")
end
function can_act(player, action)
  if action.type ~= "entity.flip" then return true end
  return false, "no flips: " .. names("pile") .. " / " .. names("hand_north") .. " / " .. names("hand_south")
end
function observe(seat)
  local theirs = {}
  for _, id in ipairs(ids("hand_" .. other(seat))) do theirs[id] = "held" end
  return { pile = ids("pile"), theirs = theirs, sentence = "they hold " .. names("hand_" .. other(seat)) }
end
function public_view()
  return { hands = "north holds " .. names("hand_north") .. "; south holds " .. names("hand_south") }
end
function sense_peek(seat, input)
  return { pile = ids("pile"), sentence = "the pile holds " .. names("pile") }
end
function participation(seat) return "acting" end
function is_terminal() return (storage.rings or 0) >= 8 end
function score() return { north = 1, south = 0 } end
"#,
    )
    .expect("main.lua");
    game
}

/// The markers in `bytes`.
fn markers(bytes: &[u8]) -> Vec<String> {
    marked(bytes, "CANARY-")
}

/// What follows each `mark` in `bytes` (two characters).
fn marked(bytes: &[u8], mark: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.match_indices(mark)
        .filter_map(|(i, m)| text.get(i + m.len()..i + m.len() + 2))
        .map(str::to_owned)
        .collect()
}

/// Must show (issue 19): the canary scan over every byte the server sends
/// a seat or a spectator — observations (long polls included), submit
/// answers (rejections naming hidden cards, script errors), error
/// answers, event streams and a resumed stream after a reconnect.
#[test]
fn no_canary_reaches_a_seat_or_spectator_over_http() {
    let data = scratch("server-canary");
    let game = canary_game(&data);
    let server = Server::start(&[game], &data.join("d"), &[]);
    let mut north = Client::enqueue(&server.addr, "canary", "north-player");
    let mut south = Client::enqueue(&server.addr, "canary", "south-player");
    let mut spectator = Client::spectator(&server.addr, &north.match_id);
    let press = |id: &str| json!({"type": "button.press", "payload": {"entityId": id}});
    let mut last = north
        .stream(None, |m| m.id == Some(4))
        .last()
        .and_then(|m| m.id);
    for _ in 0..4 {
        for c in [&mut north, &mut south] {
            let obs = c.observe(None);
            // Poke at every card, the other hand's and the pile's included.
            for card in ["ID-N1", "ID-S1", "ID-P1", "ID-P2"] {
                c.act(&json!({"type": "entity.flip", "payload": {"entityId": card}}));
                c.act(&json!({"type": "entity.grab", "payload": {"entityId": card}}));
            }
            c.act(&press("oops"));
            // A guard's reason reaches the seat that tried, whole (its
            // own marker), and no other viewer (the marker scan below).
            let gate = c.act(&press("gate"));
            assert_eq!(gate["code"], "guard_denied", "{gate}");
            let reason = gate["message"].as_str().unwrap_or_default();
            assert!(reason.starts_with("closed; you hold"), "{gate}");
            // Its ids as the seat sees them: its own card's, and `?` for
            // each card of the pile.
            assert!(reason.ends_with("; the pile holds ? ? ?"), "{gate}");
            let own = if c.seat == "north" { "(ID-N" } else { "(ID-S" };
            assert!(reason.contains(own), "{gate}");
            // `can_act`'s reason names every card: the seat's own only.
            let flip = c.act(&json!({"type": "entity.flip", "payload": {"entityId": "bell"}}));
            let expected = if c.seat == "north" {
                "no flips: ? ? ? / ID-N1 ID-N2 / ? ?"
            } else {
                "no flips: ? ? ? / ? ? / ID-S1 ID-S2"
            };
            assert_eq!(flip["message"], expected, "{flip}");
            // A sensing tool's answer names the pile's cards as `?`.
            let sensed = c.act(&json!({"type": "match.sense", "payload": {"name": "peek"}}));
            let answer = sensed["events"]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["type"] == "match.sensed"))
                .map(|e| e["data"]["answer"].clone());
            assert_eq!(
                answer,
                Some(json!({"pile": ["?", "?", "?"], "sentence": "the pile holds ? ? ?"})),
                "{sensed}"
            );
            let own = gate["events"]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["type"] == "action.rejected"));
            assert_eq!(own.map(|e| &e["data"]["message"]), Some(&gate["message"]));
            c.act(&press("bell"));
            let seq = obs["seq"].as_u64().expect("seq");
            let after = c.observe(Some(seq));
            // Answer the bell's prompt with one of the legal actions: the
            // last, the pile's top card — `?` to the seat, which answers
            // with what it was shown.
            if let Some(a) = after["legalActions"]
                .as_array()
                .and_then(|l| l.iter().rfind(|a| a["type"] == "prompt.respond"))
            {
                assert_eq!(a["payload"]["response"], "?", "{a}");
                let answered = c.act(a);
                assert_eq!(answered["accepted"], true, "{answered}");
            }
            // Malformed and refused requests answer too.
            c.call(
                "POST",
                &format!("/matches/{}/actions", c.match_id),
                Some(b"{not json"),
            );
            c.act(
                &json!({"type": "prompt.respond", "payload": {"promptId": "nope", "response": 1}}),
            );
        }
        spectator.observe(None);
        // North's stream drops and resumes from its last id each round, up
        // to north's own last attempt (whose events north always sees).
        let mine = north.act(&press("oops"))["seq"].as_u64().expect("seq");
        last = north
            .stream(last, |m| {
                m.event == "over" || m.id.is_some_and(|i| i >= mine)
            })
            .iter()
            .filter_map(|m| m.id)
            .next_back()
            .or(last);
    }
    spectator.stream(None, |_| false);
    south.stream(None, |_| false);
    north.stream(last, |_| false);
    assert_eq!(spectator.observe(None)["result"]["status"], "match_over");
    let north_saw = markers(&north.seen);
    let south_saw = markers(&south.seen);
    assert!(
        north_saw.iter().all(|m| m.starts_with('N')),
        "north saw {north_saw:?}"
    );
    assert!(
        south_saw.iter().all(|m| m.starts_with('S')),
        "south saw {south_saw:?}"
    );
    assert!(
        markers(&spectator.seen).is_empty(),
        "the spectator saw {:?}",
        markers(&spectator.seen)
    );
    // Nor any card's id through the game's text (guard reasons, prompts,
    // views, sensing answers, legal actions), but its own cards'.
    let north_ids = marked(&north.seen, "ID-");
    let south_ids = marked(&south.seen, "ID-");
    assert!(
        north_ids.iter().all(|m| m.starts_with('N')),
        "north saw {north_ids:?}"
    );
    assert!(
        south_ids.iter().all(|m| m.starts_with('S')),
        "south saw {south_ids:?}"
    );
    assert!(!north_ids.is_empty() && !south_ids.is_empty());
    let spectator_ids = marked(&spectator.seen, "ID-");
    assert!(
        spectator_ids.is_empty(),
        "the spectator saw {spectator_ids:?}"
    );
    // The canary was there to find: each seat saw its own cards' markers,
    // and the failing button did fail.
    assert!(!north_saw.is_empty() && !south_saw.is_empty());
    assert!(String::from_utf8_lossy(&north.seen).contains("script_error"));
}

/// A two-seat game with neither a `bot` nor a `safe_default`: the seat
/// whose turn it is presses `pass` (its guard refuses the other seat), and
/// six passes end it.
fn turns_game(dir: &std::path::Path) -> std::path::PathBuf {
    serving::two_seat_game(
        dir,
        "turns",
        vec![json!({"id": "pass", "components": {"button": {}}})],
        r#"
local function turn() return storage.turn or "a" end
function can_press(player, button)
  return game.seat_of(player) == turn(), "not your turn"
end
function on_button_pressed(event)
  storage.passes = (storage.passes or 0) + 1
  storage.turn = turn() == "a" and "b" or "a"
end
function participation(seat)
  if (storage.passes or 0) >= 6 then return "finished" end
  return seat == turn() and "acting" or "waiting"
end
function is_terminal() return (storage.passes or 0) >= 6 end
function score() return { a = 1, b = 0 } end
"#,
    )
}

/// docs/server.md, Join: a bot in a game with neither a `bot` nor a
/// `safe_default` plays one of its legal actions, drawn at random, rather
/// than leaving its seat waiting for ever.
#[test]
fn a_bot_with_no_bot_or_safe_default_plays_a_legal_action() {
    let data = scratch("server-random-bot");
    let game = turns_game(&data);
    let server = Server::start(&[game], &data.join("d"), &[]);
    let mut ann =
        Client::enqueue_with(&server.addr, "turns", &json!({"name": "ann", "bots": true}));
    assert_eq!(ann.seat, "a");
    let press = json!({"type": "button.press", "payload": {"entityId": "pass"}});
    let mut obs = ann.observe(None);
    for round in 0..3 {
        assert_eq!(obs["participation"], "acting", "round {round}: {obs}");
        let answer = ann.act(&press);
        assert_eq!(answer["accepted"], true, "{answer}");
        let seq = answer["seq"].as_u64().expect("seq");
        // The bot's pass comes after ann's: ann's turn again, or the end.
        obs = ann.observe(Some(seq));
        assert!(
            obs["seq"].as_u64().expect("seq") > seq,
            "the bot did not move: {obs}"
        );
    }
    assert_eq!(obs["result"]["status"], "match_over", "{obs}");
}

/// docs/server.md, Join: a random bot in a seat the game keeps acting
/// makes at most 8 moves per input, and its draws follow the match's seed
/// (two seeds, two different runs of presses).
#[test]
fn a_random_bot_is_bounded_and_differs_by_seed() {
    let data = scratch("server-restless-bot");
    let mut entities: Vec<Value> = (1..=4)
        .map(|k| json!({"id": format!("k{k}"), "components": {"button": {}}}))
        .collect();
    entities.push(json!({"id": "log", "components": {"text": {"value": ""}}}));
    let game = serving::two_seat_game(
        &data,
        "restless",
        entities,
        r#"
function on_button_pressed(event)
  local log = game.entity("log")
  log:set_text(log.text .. event.data.entityId)
end
function participation(seat) return "acting" end
"#,
    );
    let server = Server::start(std::slice::from_ref(&game), &data.join("d"), &[]);
    let pressed = |seed: u64| {
        let id = designer_match_of(
            &server.addr,
            "restless",
            &json!({"seed": seed, "bots": ["b"]}),
        );
        let mut ann = Client::join(&server.addr, &id, "ann");
        let obs = ann.observe(None);
        let text = obs["view"]["entities"]["log"]["components"]["text"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("{obs}"))
            .to_owned();
        assert_eq!(text.len(), 8 * 2, "eight presses of two letters: {text:?}");
        text
    };
    assert_ne!(pressed(1), pressed(2), "the same presses on two seeds");
}

/// docs/table.md, Hot reload: new matches use the newest code that loaded.
/// A broken edit on disk (here without `--watch`, so nothing reloads)
/// leaves new matches on the scripts the server loaded, not dead.
#[test]
fn a_broken_edit_on_disk_leaves_new_matches_on_the_code_that_loaded() {
    let data = scratch("server-broken-edit");
    let game = data.join("rps");
    common::copy_dir(&rps(), &game);
    let server = Server::start(std::slice::from_ref(&game), &data.join("d"), &[]);
    let main = game.join("scripts/main.lua");
    let text = std::fs::read_to_string(&main).expect("main.lua");
    std::fs::write(&main, format!("{text}\nthis is not lua (\n")).expect("broken edit");
    let mut ann = Client::enqueue_with(
        &server.addr,
        "rock-paper-scissors",
        &json!({"name": "ann", "bots": true}),
    );
    let obs = ann.observe(None);
    assert_eq!(obs["participation"], "acting", "{obs}");
    let choice = obs["legalActions"][0].clone();
    assert_eq!(ann.act(&choice)["accepted"], true);
}

/// docs/server.md, A designer's match: joined by its id only — `enqueue`
/// never seats anyone in it — and left off the leaderboard.
#[test]
fn a_designers_match_is_joined_by_id_only() {
    let data = scratch("server-designer");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let id = designer_match(
        &server.addr,
        &json!({"seed": 3, "bots": ["b"], "match": {"timing": {"decisionLimitMs": 60000}}}),
    );
    let stranger = Client::enqueue(&server.addr, "rock-paper-scissors", "stranger");
    assert_ne!(
        stranger.match_id, id,
        "enqueue does not seat anyone in a designer's match"
    );
    let mut me = Client::join(&server.addr, &id, "designer");
    // The override merged onto the game's config: its phases and their
    // tools are still there, the decision limit is the designer's.
    let obs = me.observe(None);
    assert_eq!(obs["phase"], "choose", "{obs}");
    let left = obs["clocks"]["seats"]["a"]["decisionMs"]
        .as_i64()
        .expect("ms");
    assert!(
        left > 10_000,
        "the designer's 60 s, not the game's 10 s: {obs}"
    );
    assert!(
        obs["legalActions"]
            .as_array()
            .expect("legal")
            .iter()
            .all(|a| a["type"] == "prompt.respond"),
        "{obs}"
    );
    // Against the bot: answer every prompt until the match is over.
    play_out(std::slice::from_mut(&mut me));
    let board = get_json(&server.addr, "/games/rock-paper-scissors/leaderboard");
    assert_eq!(board["standings"], json!([]), "{board}");
}

/// An attempt's answer carries the events of its sequence the seat sees:
/// a sensing call's answer reaches a program that never opens a stream.
#[test]
fn a_sensing_answer_comes_back_with_the_attempt() {
    let data = scratch("server-sense");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let mut ann = Client::enqueue(&server.addr, "rock-paper-scissors", "ann");
    let _bob = Client::enqueue(&server.addr, "rock-paper-scissors", "bob");
    let answer = ann.act(&json!({"type": "match.sense", "payload": {"name": "oracle"}}));
    assert_eq!(answer["accepted"], true, "{answer}");
    let events = answer["events"].as_array().expect("events");
    assert!(
        events.iter().any(|e| e["type"] == "match.sensed"),
        "{answer}"
    );
}

/// Listings page: `limit`, then `before` the last one's id, until empty.
#[test]
fn finished_and_open_matches_page_by_id() {
    let data = scratch("server-pages");
    let server = Server::start(&[rps()], &data.join("d"), &[]);
    let mut made: Vec<String> = (0..5)
        .map(|i| designer_match(&server.addr, &json!({"seed": i})))
        .collect();
    made.reverse();
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let q = before
            .as_ref()
            .map(|b| format!("&before={b}"))
            .unwrap_or_default();
        let page = request(
            &server.addr,
            "GET",
            &format!("/games/rock-paper-scissors/matches?limit=2{q}"),
            None,
            None,
        )
        .json();
        let ids: Vec<String> = page
            .as_array()
            .expect("page")
            .iter()
            .map(|m| m["matchId"].as_str().expect("id").to_owned())
            .collect();
        if ids.is_empty() {
            break;
        }
        assert!(ids.len() <= 2);
        before = ids.last().cloned();
        seen.extend(ids);
    }
    assert_eq!(seen, made, "newest first, each once");
    let r = request(
        &server.addr,
        "GET",
        "/games/rock-paper-scissors/matches?page=2",
        None,
        None,
    );
    assert_eq!(r.status, 400, "an unknown parameter is refused");
}

/// Must show (issue 37): a seat sorts its own hand over HTTP
/// (`container.reorder`); the other seat and a spectator learn, in their
/// event streams, that it did and not how, and their observations do not
/// change; the other seat cannot sort it.
#[test]
fn a_seat_sorts_its_hand_over_http_and_only_it_sees_the_order() {
    let data = scratch("server-sort");
    let server = Server::start(
        &[root().join("examples/peek-and-play")],
        &data.join("d"),
        &[],
    );
    let mut one = Client::enqueue(&server.addr, "peek-and-play", "ann");
    let mut two = Client::enqueue(&server.addr, "peek-and-play", "bob");
    let (north, south) = if one.seat == "north" {
        (&mut one, &mut two)
    } else {
        (&mut two, &mut one)
    };
    let mut spectator = Client::spectator(&server.addr, &north.match_id);
    let items =
        |obs: &Value| obs["view"]["entities"]["hand_north"]["components"]["container"].clone();
    let mut hand: Vec<Value> = Vec::new();
    let mut after = None;
    for _ in 0..20 {
        let obs = north.observe(after);
        hand = items(&obs)["items"].as_array().cloned().unwrap_or_default();
        if hand.len() == 3 {
            break;
        }
        after = obs["seq"].as_u64();
    }
    assert_eq!(hand.len(), 3, "north was dealt its hand");
    let south_before = items(&south.observe(None));
    let spectator_before = items(&spectator.observe(None));
    hand.reverse();
    let sort =
        json!({"type": "container.reorder", "payload": {"entityId": "hand_north", "items": hand}});
    let answer = north.act(&sort);
    assert_eq!(answer["accepted"], true, "{answer}");
    let seq = answer["seq"].as_u64().expect("seq");
    assert_eq!(items(&north.observe(None))["items"], json!(hand));
    for (viewer, before) in [
        (&mut *south, south_before),
        (&mut spectator, spectator_before),
    ] {
        assert_eq!(items(&viewer.observe(None)), before, "{}", viewer.seat);
        let reordered: Vec<Value> = viewer
            .stream(None, |m| m.id.is_some_and(|i| i >= seq))
            .iter()
            .flat_map(|m| m.events())
            .filter(|e| e["type"] == "container.reordered")
            .collect();
        assert_eq!(reordered.len(), 1, "{}", viewer.seat);
        assert_eq!(
            reordered[0]["data"],
            json!({"containerId": "hand_north", "items": null})
        );
    }
    let theirs = south.act(&sort);
    assert_eq!(theirs["code"], "not_yours", "{theirs}");
}
