//! Hostile input against a real server (docs/server.md, Limits and
//! errors): malformed JSON, wrong types, a 10 MB body, unknown routes,
//! forged sources, replayed clientActionIds and a flood past the rate
//! limit — each a clear 4xx with a JSON `{code, message}`, and nothing
//! acknowledged is lost.

mod common;
#[path = "common/serving.rs"]
mod serving;

use common::{root, scratch};
use serde_json::{json, Value};
use serving::{request, try_request, Client, Server};

fn basics() -> std::path::PathBuf {
    root().join("examples/basics")
}

fn add(amount: i64) -> Value {
    json!({"type": "counter.add", "payload": {"entityId": "score_north", "amount": amount}})
}

/// A request and the refusal it must get: method, path, token, body,
/// status, code.
type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a [u8], u16, &'a str);

/// Asserts a JSON error with this status and code.
fn refused(r: &serving::Reply, status: u16, code: &str, what: &str) {
    assert_eq!(
        r.status,
        status,
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    let v = r.json();
    assert_eq!(v["code"], code, "{what}: {v}");
    assert!(
        v["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {v}"
    );
}

#[test]
fn every_malformed_request_is_a_json_4xx_and_changes_nothing() {
    let data = scratch("server-hostile");
    let server = Server::start(&[basics()], &data.join("d"), &[]);
    let mut p1 = Client::enqueue(&server.addr, "basics", "ann");
    let _p2 = Client::enqueue(&server.addr, "basics", "bob");
    let accepted = p1.act(&add(1));
    assert_eq!(accepted["accepted"], true, "{accepted}");
    let seq = p1.observe(None)["seq"].clone();
    let path = format!("/matches/{}/actions", p1.match_id);
    let t = p1.token.clone();
    let tok = t.as_deref();
    let post = |body: &[u8]| request(&server.addr, "POST", &path, tok, Some(body));
    refused(&post(b"{not json"), 400, "malformed_json", "broken JSON");
    refused(&post(b""), 400, "missing_field", "empty body");
    refused(&post(b"[1,2]"), 400, "invalid_type", "an array");
    refused(
        &post(&[0xff, 0xfe, b'{']),
        400,
        "malformed_json",
        "not UTF-8",
    );
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    refused(
        &post(deep.as_bytes()),
        400,
        "malformed_json",
        "nested 10,000 deep",
    );
    let body = |v: Value| v.to_string().into_bytes();
    refused(
        &post(&body(json!({"clientActionId": 5, "action": add(1)}))),
        400,
        "invalid_type",
        "a numeric id",
    );
    refused(
        &post(&body(json!({"clientActionId": "", "action": add(1)}))),
        400,
        "invalid_value",
        "an empty id",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "x".repeat(500), "action": add(1)}),
        )),
        400,
        "invalid_value",
        "a long id",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": "counter.add"}),
        )),
        400,
        "invalid_type",
        "an action string",
    );
    refused(
        &post(&body(json!({"clientActionId": "a", "action": {"type": 7}}))),
        400,
        "invalid_type",
        "a numeric type",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": {"type": "counter.add", "payload": [1]}}),
        )),
        400,
        "invalid_type",
        "a list payload",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": add(1), "extra": 1}),
        )),
        400,
        "unknown_key",
        "an extra key",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": {"type": "counter.add", "payload": {}, "at": 0}}),
        )),
        400,
        "unknown_key",
        "a client clock",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": {"type": "counter.add", "source": {"kind": "player", "playerId": "p2"}, "payload": {}}}),
        )),
        403,
        "forged_source",
        "another player",
    );
    refused(
        &post(&body(
            json!({"clientActionId": "a", "action": {"type": "system.game_start", "payload": {}}}),
        )),
        403,
        "not_a_player_action",
        "a system action",
    );
    // 10 MB: refused before it is read.
    let big = vec![b' '; 10 * 1024 * 1024];
    refused(&post(&big), 413, "body_too_large", "a 10 MB body");
    let enqueue_big = request(
        &server.addr,
        "POST",
        "/games/basics/enqueue",
        None,
        Some(&big),
    );
    refused(&enqueue_big, 413, "body_too_large", "a 10 MB enqueue");
    // Routes, methods, queries and lobby bodies that are wrong.
    let bad_after = format!("/matches/{}/observation?after=x", p1.match_id);
    let cases: [Case<'_>; 9] = [
        ("GET", "/nope", None, b"", 404, "unknown_route"),
        (
            "GET",
            "/matches/nope/spectate",
            None,
            b"",
            404,
            "unknown_match",
        ),
        (
            "POST",
            "/games/nope/enqueue",
            None,
            b"",
            404,
            "unknown_game",
        ),
        ("DELETE", "/games", None, b"", 405, "method_not_allowed"),
        (
            "GET",
            "/games/basics/matches?status=lost",
            None,
            b"",
            400,
            "invalid_value",
        ),
        ("GET", &bad_after, tok, b"", 400, "bad_request"),
        (
            "POST",
            "/games/basics/enqueue",
            None,
            b"{\"name\": 3}",
            400,
            "invalid_type",
        ),
        (
            "POST",
            "/games/basics/matches",
            None,
            b"{\"match\": {\"timing\": 5}}",
            400,
            "invalid_match",
        ),
        (
            "POST",
            "/games/basics/matches",
            None,
            b"{\"seed\": -1}",
            400,
            "invalid_value",
        ),
    ];
    for (method, path, token, body, status, code) in cases {
        let r = request(&server.addr, method, path, token, Some(body));
        refused(&r, status, code, &format!("{method} {path}"));
    }
    // A query the route cannot read: the message names the parameter.
    for (query, name) in [("after=x", "after"), ("foo=1", "foo")] {
        let path = format!("/matches/{}/observation?{query}", p1.match_id);
        let r = request(&server.addr, "GET", &path, tok, None);
        refused(&r, 400, "bad_request", query);
        let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains(name), "{query}: {message}");
    }
    // Joining a seat the game lacks names it (a taken seat is 409).
    let open = request(
        &server.addr,
        "POST",
        "/games/basics/matches",
        None,
        Some(b"{}"),
    )
    .json();
    let join = format!("/matches/{}/join", open["matchId"].as_str().expect("id"));
    let q = request(&server.addr, "POST", &join, None, Some(br#"{"seat": "q"}"#));
    refused(&q, 400, "unknown_seat", "a seat the game lacks");
    // None of it reached the room.
    assert_eq!(p1.observe(None)["seq"], seq, "nothing changed");
    assert_eq!(
        request(&server.addr, "GET", "/health", None, None).status,
        200
    );
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

/// A retry with the same clientActionId gets the first answer (the same
/// sequence) and processes nothing; the same id with another action is a
/// conflict.
#[test]
fn a_replayed_client_action_id_is_answered_once() {
    let data = scratch("server-idempotent");
    let server = Server::start(&[basics()], &data.join("d"), &[]);
    let mut p1 = Client::enqueue(&server.addr, "basics", "ann");
    let _p2 = Client::enqueue(&server.addr, "basics", "bob");
    let first = p1.act_as("once", &add(2));
    let seq = p1.observe(None)["seq"].clone();
    for _ in 0..5 {
        assert_eq!(p1.act_as("once", &add(2)), first);
    }
    assert_eq!(
        p1.observe(None)["seq"],
        seq,
        "the retries processed nothing"
    );
    let body = json!({"clientActionId": "once", "action": add(3)}).to_string();
    let r = request(
        &server.addr,
        "POST",
        &format!("/matches/{}/actions", p1.match_id),
        p1.token.as_deref(),
        Some(body.as_bytes()),
    );
    refused(
        &r,
        409,
        "client_action_id_reused",
        "the same id, another action",
    );
    // A rejected attempt is answered the same way every time too.
    let bad = p1.act_as(
        "bad",
        &json!({"type": "counter.add", "payload": {"entityId": "nothing", "amount": 1}}),
    );
    assert_eq!(bad["accepted"], false);
    assert_eq!(
        p1.act_as(
            "bad",
            &json!({"type": "counter.add", "payload": {"entityId": "nothing", "amount": 1}})
        ),
        bad
    );
}

/// A flood past the rate limit: the extra requests get 429 with a JSON
/// error and a Retry-After, every acknowledged action is in the room, and
/// other tokens are served meanwhile.
#[test]
fn a_flood_past_the_rate_limit_is_refused_and_loses_nothing() {
    let data = scratch("server-flood");
    let server = Server::start(
        &[basics()],
        &data.join("d"),
        &["--rate", "20", "--burst", "20"],
    );
    let mut p1 = Client::enqueue(&server.addr, "basics", "ann");
    let mut p2 = Client::enqueue(&server.addr, "basics", "bob");
    let path = format!("/matches/{}/actions", p1.match_id);
    let (mut acked, mut limited) = (Vec::new(), 0);
    for i in 0..200 {
        let body = json!({"clientActionId": format!("f{i}"), "action": add(1)}).to_string();
        let r = try_request(
            &server.addr,
            "POST",
            &path,
            p1.token.as_deref(),
            Some(body.as_bytes()),
        )
        .expect("answered");
        match r.status {
            200 => acked.push(r.json()["seq"].as_u64().expect("seq")),
            429 => {
                refused(&r, 429, "rate_limited", "the flood");
                assert!(
                    r.head.to_ascii_lowercase().contains("retry-after"),
                    "{}",
                    r.head
                );
                limited += 1;
            }
            s => panic!("unexpected {s}: {}", String::from_utf8_lossy(&r.body)),
        }
    }
    assert!(
        limited > 0 && acked.len() >= 20,
        "{} acked, {limited} limited",
        acked.len()
    );
    // The other seat's token has its own bucket.
    assert!(p2.observe(None)["seq"].is_u64());
    // Every acknowledged action is in the seat's stream.
    let last = *acked.last().expect("acked");
    let seen: Vec<u64> = p2
        .stream(None, |m| m.id.is_some_and(|id| id >= last))
        .iter()
        .flat_map(|m| m.events())
        .filter(|e| e["type"] == "counter.changed")
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    for s in &acked {
        assert!(seen.contains(s), "acknowledged {s} is missing");
    }
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(p1.act(&add(1))["accepted"], true, "the bucket refills");
}

/// Past `--max-rooms` the server refuses new matches with 503 and keeps
/// serving the ones it has.
#[test]
fn past_the_room_limit_new_matches_are_refused() {
    let data = scratch("server-rooms");
    let server = Server::start(&[basics()], &data.join("d"), &["--max-rooms", "2"]);
    let mut made = Vec::new();
    for name in ["a", "b", "c", "d"] {
        made.push(Client::enqueue(&server.addr, "basics", name));
    }
    let r = request(
        &server.addr,
        "POST",
        "/games/basics/enqueue",
        None,
        Some(b"{}"),
    );
    refused(&r, 503, "room_limit", "a third match");
    assert_eq!(made[0].act(&add(1))["accepted"], true);
}

/// A match takes at most `--max-inputs-per-match` inputs; past that an
/// attempt is refused (409 `match_full`) and nothing more is logged.
#[test]
fn past_the_input_limit_a_match_takes_nothing_more() {
    let data = scratch("server-inputs");
    let server = Server::start(
        &[basics()],
        &data.join("d"),
        &["--max-inputs-per-match", "12"],
    );
    let mut p1 = Client::enqueue(&server.addr, "basics", "ann");
    let _p2 = Client::enqueue(&server.addr, "basics", "bob");
    // The start logged 5 inputs (game start, two joins, two seats).
    for _ in 0..7 {
        assert!(p1.act(&add(1))["seq"].is_u64());
    }
    let seq = p1.observe(None)["seq"].clone();
    let body = json!({"clientActionId": "one-more", "action": add(1)}).to_string();
    let path = format!("/matches/{}/actions", p1.match_id);
    let r = request(
        &server.addr,
        "POST",
        &path,
        p1.token.as_deref(),
        Some(body.as_bytes()),
    );
    refused(&r, 409, "match_full", "past the input limit");
    assert_eq!(p1.observe(None)["seq"], seq);
}

/// Idle connections cannot hold every place under `--max-connections`: a
/// connection that sends no request head in time is closed.
#[test]
fn idle_connections_are_closed_and_free_their_places() {
    let data = scratch("server-idle");
    let server = Server::start(
        &[basics()],
        &data.join("d"),
        &["--max-connections", "2", "--header-timeout-ms", "300"],
    );
    let idle: Vec<std::net::TcpStream> = (0..2)
        .map(|_| std::net::TcpStream::connect(&server.addr).expect("connect"))
        .collect();
    // Once the idle ones' 300 ms are up, their places free up (asked
    // again until then: a busy machine may take longer to close them;
    // without the timeout they would hold their places for ever).
    let mut status = 0;
    for _ in 0..300 {
        status = request(&server.addr, "GET", "/health", None, None).status;
        if status == 200 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(status, 200, "the idle connections still hold every place");
    drop(idle);
}

/// A bearer string the server never gave has no bucket of its own: it
/// shares its peer's, so made-up tokens cannot get around the rate.
#[test]
fn made_up_tokens_do_not_get_around_the_rate_limit() {
    let data = scratch("server-made-up");
    let server = Server::start(
        &[basics()],
        &data.join("d"),
        &["--rate", "1", "--burst", "3"],
    );
    let statuses: Vec<u16> = (0..40)
        .map(|i| {
            let token = format!("made-up-{i}");
            request(&server.addr, "GET", "/games", Some(&token), None).status
        })
        .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
}
