//! Must show (issue 36): one hostile game costs only its own match, on the
//! real server (docs/server.md, A game that stalls; docs/lua-api.md, The
//! byte budget).
//!
//! Two matches of a game whose scripts never end (a press whose
//! `__close` loops for ever; a timer, armed by an ordinary press, whose
//! callback loops) run beside a third match of another game, with two
//! room threads. The third keeps answering; each bombed match ends with
//! the logged reason `aborted: the game stalled …`; after `kill -9` and a
//! restart the server serves, the bombs do not go off again, and the
//! stalled matches stay ended. A server under an address-space limit
//! serves a game that hoards bytes every way it can, and lives.
//!
//! Nothing here compares elapsed time: the allowance is short so the
//! stalls come soon, and every wait is a liveness wait with a generous
//! bound.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{root, scratch};
use serde_json::{json, Value};
use serving::{request, try_request, Client, Server};

/// The stall allowance the tests run under (ms): far shorter than the
/// bombs take to spend their budget of a hundred million instructions
/// (each loop makes a table, about five instructions' worth of time), so
/// the watchdog, not the budget, ends them.
const STALL_MS: &str = "100";

/// A two-seat match game (`a`, `b`) with buttons `bomb`, `arm` and
/// `press` and a budget of a hundred million instructions (the host's
/// ceiling): a press of `bomb` never ends (its `__close` loops too), a
/// press of `arm` starts a timer whose callback never ends.
fn bomb_game(dir: &Path) -> PathBuf {
    let game = dir.join("bomb");
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let button = |id: &str| json!({"id": id, "components": {"button": {}}});
    let manifest = json!({
        "id": "bomb", "name": "bomb", "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "limits": {"instructionsMax": 100_000_000},
        "entities": [button("bomb"), button("arm"), button("press"),
                     {"id": "count", "components": {"counter": {}}}],
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null}}
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(
        game.join("scripts/main.lua"),
        "function on_button_pressed(e)\n\
           local id = e.data.entityId\n\
           if id == 'bomb' then\n\
             local x <close> = setmetatable({}, {__close = function() while true do local t = {} end end})\n\
             while true do local t = {} end\n\
           elseif id == 'arm' then\n\
             timer.after(200, 'boom')\n\
           end\n\
           game.entity('count'):add(1)\n\
         end\n\
         function boom() while true do local t = {} end end\n\
         function on_match_aborted(e) while true do local t = {} end end\n",
    )
    .expect("main.lua");
    game
}

fn press(id: &str) -> Value {
    json!({"type": "button.press", "payload": {"entityId": id}})
}

fn add() -> Value {
    json!({"type": "counter.add", "payload": {"entityId": "score_north", "amount": 1}})
}

/// Waits (a liveness wait: up to 60 s) until `seen` says yes.
fn eventually(what: &str, server: &Server, mut seen: impl FnMut() -> bool) {
    for _ in 0..600 {
        if seen() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("never: {what}\n{}", server.stderr());
}

/// The result of a match, as its row in the lobby says.
fn result_of(addr: &str, match_id: &str) -> Value {
    let r = request(addr, "GET", &format!("/matches/{match_id}"), None, None);
    r.json()
}

fn stalled(row: &Value) -> bool {
    row["status"] == "finished"
        && row["result"]["status"] == "match_aborted"
        && row["result"]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("aborted: the game stalled"))
}

#[test]
fn a_stalling_game_costs_only_its_own_match_and_never_stalls_again() {
    let dir = scratch("isolation");
    let bomb = bomb_game(&dir);
    let basics = root().join("examples/basics");
    let games = [bomb, basics];
    let extra = ["--room-threads", "2", "--room-stall-ms", STALL_MS];
    let mut server = Server::start(&games, &dir.join("data"), &extra);
    let addr = server.addr.clone();
    // Match A and B of the bomb game, match C of basics.
    let mut a1 = Client::enqueue(&addr, "bomb", "ann");
    let _a2 = Client::enqueue(&addr, "bomb", "bob");
    let mut b1 = Client::enqueue(&addr, "bomb", "cid");
    let _b2 = Client::enqueue(&addr, "bomb", "dee");
    let mut c1 = Client::enqueue(&addr, "basics", "eve");
    let _c2 = Client::enqueue(&addr, "basics", "fay");
    assert_ne!(a1.match_id, b1.match_id);
    let before = c1.act(&add());
    assert_eq!(before["accepted"], true, "{before}");

    // The third match is played all along, from a thread of its own.
    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let player = {
        let (stop, served) = (stop.clone(), served.clone());
        let (addr, match_id, token) = (addr.clone(), c1.match_id.clone(), c1.token.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let body = json!({"clientActionId": format!("c-{n}"), "action": add()});
                let r = request(
                    &addr,
                    "POST",
                    &format!("/matches/{match_id}/actions"),
                    token.as_deref(),
                    Some(body.to_string().as_bytes()),
                );
                assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
                assert_eq!(r.json()["accepted"], true);
                served.fetch_add(1, Ordering::Relaxed);
                // Within the server's rate limit for one token.
                std::thread::sleep(Duration::from_millis(40));
            }
        })
    };

    // A: the press never ends; the server stops it, undoes it and ends
    // the match — the press is answered, as refused.
    let r = a1.call(
        "POST",
        &format!("/matches/{}/actions", a1.match_id),
        Some(
            json!({"clientActionId": "boom-1", "action": press("bomb")})
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.json()["code"],
        "game_stalled",
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    // B: an ordinary press arms a timer; its callback stalls later.
    let armed = b1.act(&press("arm"));
    assert_eq!(armed["accepted"], true, "{armed}");
    eventually("both bombed matches end as stalled", &server, || {
        stalled(&result_of(&addr, &a1.match_id)) && stalled(&result_of(&addr, &b1.match_id))
    });
    // The third match was served while the bombs went off, and still is.
    let during = served.load(Ordering::Relaxed);
    eventually("the third match keeps being served", &server, || {
        served.load(Ordering::Relaxed) > during + 5
    });
    stop.store(true, Ordering::Relaxed);
    player.join().expect("the third match's player");
    assert_eq!(
        request(&addr, "GET", "/health", None, None).json()["status"],
        "ok"
    );
    // The stalled press was never counted: the match holds only what was
    // logged before it (nothing).
    let seen = a1.observe(None);
    assert_eq!(seen["result"]["status"], "match_aborted", "{seen}");
    assert!(server.stderr().contains("the game stalled"));

    // kill -9 and restart: the server serves; the bombs do not return.
    server.kill();
    let mut again = Server::start(&games, &dir.join("data"), &extra);
    let addr = again.addr.clone();
    assert_eq!(
        request(&addr, "GET", "/health", None, None).json()["status"],
        "ok"
    );
    c1.addr = addr.clone();
    a1.addr = addr.clone();
    b1.addr = addr.clone();
    let after = c1.act(&add());
    assert_eq!(after["accepted"], true, "{after}");
    assert!(stalled(&result_of(&addr, &a1.match_id)));
    assert!(stalled(&result_of(&addr, &b1.match_id)));
    // B's timer would have fired by now: the match is over, nothing fires.
    std::thread::sleep(Duration::from_millis(600));
    let seen = b1.observe(None);
    assert_eq!(seen["result"]["status"], "match_aborted", "{seen}");
    let late = c1.act(&add());
    assert_eq!(late["accepted"], true, "{late}");
    assert!(
        !again.stderr().contains("the game stalled"),
        "a bomb went off again after the restart: {}",
        again.stderr()
    );
    assert!(again.alive());
}

/// A game that hoards bytes in every place the host keeps them: storage
/// (a megabyte a key, a thousand keys in one press, or one key a press),
/// prompt titles, spawned entities' props, timer data, a huge string in
/// the VM, and a `legal_actions` answer of a hundred megabytes.
fn hoard_game(dir: &Path) -> PathBuf {
    let game = dir.join("hoard");
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let button = |id: &str| json!({"id": id, "components": {"button": {}}});
    let manifest = json!({
        "id": "hoard", "name": "hoard", "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "limits": {"instructionsMax": 100_000_000},
        "entities": [button("many"), button("one"), button("prompt"), button("spawn"),
                     button("timer"), button("vm"), button("count")],
        "prefabs": {"token": {"components": {"grabbable": {}}}},
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null}}
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(
        game.join("scripts/main.lua"),
        "local mb = string.rep('x', 1000000)\n\
         function on_button_pressed(e)\n\
           local id = e.data.entityId\n\
           if id == 'many' then for i = 1, 1000 do storage['k' .. i] = mb end\n\
           elseif id == 'one' then storage.n = (storage.n or 0) + 1; storage['one' .. storage.n] = mb\n\
           elseif id == 'prompt' then for i = 1, 1000 do ui:prompt('p1', mb, {'a'}) end\n\
           elseif id == 'spawn' then for i = 1, 1000 do game.spawn('token', {props = {x = mb}}) end\n\
           elseif id == 'timer' then for i = 1, 1000 do timer.after(1000000, 'noop', mb) end\n\
           elseif id == 'vm' then local t = {} for i = 1, 1e9 do t[i] = mb .. i end\n\
           end\n\
         end\n\
         function noop() end\n\
         function legal_actions(seat)\n\
           local t = {} for i = 1, 100 do t[i] = {type = 'button.press', payload = {entityId = mb}} end\n\
           return t\n\
         end\n",
    )
    .expect("main.lua");
    game
}

#[test]
fn a_byte_hoarding_game_is_refused_and_the_server_lives_under_an_address_space_limit() {
    let dir = scratch("hoard");
    let games = [hoard_game(&dir), root().join("examples/basics")];
    // About 1.5 GB of the address space is the process's own (thread
    // stacks, allocator arenas); the rest is a fraction of what the old
    // server took before it aborted.
    let mut server = Server::start_limited(&games, &dir.join("data"), &[], 2_600_000_000);
    let addr = server.addr.clone();
    let mut p = Client::enqueue(&addr, "hoard", "ann");
    let _q = Client::enqueue(&addr, "hoard", "bob");
    let mut c = Client::enqueue(&addr, "basics", "eve");
    let _d = Client::enqueue(&addr, "basics", "fay");
    for (button, code) in [
        ("many", "script_error"),
        ("prompt", "script_error"),
        ("spawn", "script_error"),
        ("timer", "script_error"),
        ("vm", "script_error"),
    ] {
        let r = p.act(&press(button));
        assert_eq!(r["accepted"], false, "{button}: {r}");
        assert_eq!(r["code"], code, "{button}: {r}");
        assert!(server.alive(), "the server died on {button}");
    }
    // One megabyte a press, kept: refused once the byte budget (64 MiB by
    // default) is reached, and again on every press after.
    let mut kept = 0;
    let mut refused = 0;
    for _ in 0..90 {
        let r = p.act(&press("one"));
        if r["accepted"] == true {
            kept += 1;
        } else {
            refused += 1;
            assert_eq!(r["code"], "script_error", "{r}");
        }
    }
    assert!((50..70).contains(&kept), "{kept} megabytes kept");
    assert!(refused > 20);
    // The game's legal actions (a hundred megabytes asked for) are refused
    // as an answer; the observation still comes.
    let seen = p.observe(None);
    assert!(seen.get("seq").is_some(), "{seen}");
    assert!(server.alive());
    let other = c.act(&add());
    assert_eq!(other["accepted"], true, "{other}");
    assert_eq!(
        try_request(&addr, "GET", "/health", None, None).map(|r| r.json()["status"].clone()),
        Some(json!("ok"))
    );
}

/// A long match is not a stalled one: each logged input has the allowance
/// when the log is replayed, never the whole log one allowance. Three
/// hundred presses of a few milliseconds each replay in far more than the
/// 100 ms allowance, each far below it; after `kill -9` the match comes
/// back and is played on.
#[test]
fn a_long_match_comes_back_though_its_whole_replay_outlasts_the_allowance() {
    let dir = scratch("isolation-long");
    let button = json!({"id": "work", "components": {"button": {}}});
    let game = serving::two_seat_game(
        &dir,
        "slow",
        vec![button],
        "function on_button_pressed(e)\n\
           for i = 1, 30000 do local t = {} end\n\
           storage.n = (storage.n or 0) + 1\n\
         end\n",
    );
    let games = [game];
    let extra = [
        "--room-threads",
        "1",
        "--room-stall-ms",
        STALL_MS,
        "--burst",
        "1000",
    ];
    let mut server = Server::start(&games, &dir.join("data"), &extra);
    let addr = server.addr.clone();
    let mut a = Client::enqueue(&addr, "slow", "ann");
    let _b = Client::enqueue(&addr, "slow", "bob");
    for n in 0..300 {
        let r = a.act(&press("work"));
        assert_eq!(r["accepted"], true, "press {n}: {r}");
    }
    server.kill();
    let mut again = Server::start(&games, &dir.join("data"), &extra);
    a.addr = again.addr.clone();
    let r = a.act(&press("work"));
    assert_eq!(r["accepted"], true, "{r}\n{}", again.stderr());
    let row = result_of(&again.addr, &a.match_id);
    assert_eq!(row["status"], "running", "{row}");
    assert!(
        !again.stderr().contains("stalled"),
        "the replay was taken for a stall: {}",
        again.stderr()
    );
    assert!(again.alive());
}

/// A game without a match contract has no result to end on when it
/// stalls: its room is rolled back and its scripts stopped, and it waits
/// for nothing — a timer armed before the stall does not fire on the
/// stopped scripts (a failure logged then would not replay after a
/// restart). After `kill -9` the room is built from its log, serves, and
/// its timer fires for real.
#[test]
fn a_stalled_game_without_a_match_fires_nothing_until_it_restarts() {
    let dir = scratch("isolation-nomatch");
    let game = dir.join("loose");
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let button = |id: &str| json!({"id": id, "components": {"button": {}}});
    let manifest = json!({
        "id": "loose", "name": "loose", "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "limits": {"instructionsMax": 100_000_000},
        "entities": [button("arm"), {"id": "fuse", "components": {"counter": {}}},
                     {"id": "ticks", "components": {"counter": {}}}],
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}]
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(
        game.join("scripts/main.lua"),
        "function on_button_pressed(e) timer.after(400, 'tick') end\n\
         function on_counter_changed(e)\n\
           if e.data.entityId == 'fuse' and e.data.value >= 5 then while true do local t = {} end end\n\
         end\n\
         function tick() game.entity('ticks'):add(7) end\n",
    )
    .expect("main.lua");
    let games = [game];
    let extra = ["--room-threads", "1", "--room-stall-ms", STALL_MS];
    let mut server = Server::start(&games, &dir.join("data"), &extra);
    let addr = server.addr.clone();
    let mut a = Client::enqueue(&addr, "loose", "ann");
    let _b = Client::enqueue(&addr, "loose", "bob");
    let armed = a.act(&press("arm"));
    assert_eq!(armed["accepted"], true, "{armed}");
    // Only an add of five or more sets the fuse off: the dry runs that list a
    // seat's legal actions try adds of one.
    let boom = json!({"type": "counter.add", "payload": {"entityId": "fuse", "amount": 5}});
    let body = json!({"clientActionId": "boom", "action": boom}).to_string();
    let path = format!("/matches/{}/actions", a.match_id);
    let r = request(
        &addr,
        "POST",
        &path,
        a.token.as_deref(),
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    // Well past the timer: nothing fired on the stopped scripts.
    std::thread::sleep(Duration::from_millis(1000));
    let seen = a.observe(None);
    assert_eq!(ticks(&seen), Some(0), "{seen}");

    server.kill();
    let mut again = Server::start(&games, &dir.join("data"), &extra);
    a.addr = again.addr.clone();
    eventually("the timer fires after the restart", &again, || {
        ticks(&a.observe(None)) == Some(7)
    });
    assert!(again.alive(), "{}", again.stderr());
}

/// The `ticks` counter's value in an observation.
fn ticks(seen: &Value) -> Option<i64> {
    seen["view"]["entities"]["ticks"]["components"]["counter"]["value"].as_i64()
}
