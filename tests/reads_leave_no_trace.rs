//! Must show (issue 36, finding 6: "who polls changes the future"):
//! reading never changes the game (docs/lua-api.md, Reading leaves no
//! trace). Two rooms of the same game on the same seed take the same
//! inputs; before every input, the second is read every way a host reads
//! a room — each seat's and the spectators' observation (the game's views,
//! its match functions, its legal actions: its own `legal_actions` or dry
//! runs of every candidate), each seat's safe default and the game's bot.
//! After every input both rooms hold the same state hash and wrote the
//! same events, byte for byte: over every example game, and over hostile
//! games whose reads try to leave something behind.

mod common;

use std::path::{Path, PathBuf};

use common::{root, run, scratch};
use digipology_kernel::Viewer;
use digipology_room::{package, Package, Room};
use serde_json::{json, Value};

/// A started room of `game` on `seed`, one player per seat.
fn started(package: &Package, seed: u64) -> (Room, Vec<u8>) {
    let mut room = package::build_room(package, seed, (None, None)).expect("room");
    let mut events = Vec::new();
    room.start(&mut events).expect("start");
    let seats = package.seats();
    let players: Vec<String> = (1..=seats.len()).map(|i| format!("p{i}")).collect();
    room.seat_players(&players, &seats, &mut events)
        .expect("seat");
    (room, events)
}

/// Reads `room` every way a host does, and answers the first legal action
/// of the first seat that has one (a move for the bot that drives both
/// rooms).
fn read_everything(room: &mut Room, seats: &[String], step: u32) -> Option<Value> {
    let now = room.clock();
    let mut chosen = None;
    for seat in seats {
        let o = room.observation_at(&Viewer::Seat(seat.as_str().into()), now);
        if chosen.is_none() {
            chosen = o["legalActions"]
                .as_array()
                .and_then(|l| l.first().cloned());
        }
        let _ = room.safe_default_action(seat);
        let _ = room.game_bot(seat, step);
        let _ = room.legal_actions(seat);
        let mut order = |n: usize| (0..n).collect::<Vec<_>>();
        let _ = room.first_legal(seat, &mut order);
    }
    let _ = room.observation_at(&Viewer::Spectator, now);
    let _ = room.observe(&Viewer::Referee);
    chosen
}

/// Plays `inputs` (then, for a match, bot moves chosen by reading the
/// polled room) in two rooms of `game`, the second read before every
/// input; asserts both rooms stay the same, hash and events.
fn same_with_and_without_reads(game: &Path, inputs: &[Value], bot_moves: u32) {
    let package = Package::load(game).expect("game loads");
    let seats = package.seats();
    let (mut quiet, e1) = started(&package, 7);
    let (mut read, e2) = started(&package, 7);
    assert_eq!(e1, e2, "{}: the starts differ", game.display());
    let name = game.display().to_string();
    let step = std::cell::Cell::new(0u32);
    let feed = |action: Value, quiet: &mut Room, read: &mut Room| {
        step.set(step.get() + 1);
        let step = step.get();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        quiet.submit_json(action.clone(), &mut a).expect("quiet");
        read.submit_json(action.clone(), &mut b).expect("read");
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{name}: input {step} ({action}) wrote other events once the room was read"
        );
        assert_eq!(
            quiet.kernel().state_hash(),
            read.kernel().state_hash(),
            "{name}: input {step} ({action}) left another state once the room was read"
        );
    };
    for action in inputs {
        let _ = read_everything(&mut read, &seats, step.get());
        feed(action.clone(), &mut quiet, &mut read);
    }
    for _ in 0..bot_moves {
        if read.is_over() {
            break;
        }
        let Some(mut action) = read_everything(&mut read, &seats, step.get()) else {
            break;
        };
        action["at"] = json!(read.clock() + 100);
        feed(action, &mut quiet, &mut read);
    }
}

/// The example game's own inputs (`actions.jsonl`), if it has any.
fn inputs_of(game: &Path) -> Vec<Value> {
    std::fs::read_to_string(game.join("actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn examples() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("game.json").exists())
        .collect();
    out.sort();
    out
}

#[test]
fn reading_an_example_game_never_changes_it() {
    for game in examples() {
        same_with_and_without_reads(&game, &inputs_of(&game), 60);
    }
}

/// A two-seat match game whose every read-only function tries to leave
/// something behind, and whose handlers would tell: `script` is appended
/// to a common part that presses count.
fn hostile(dir: &Path, id: &str, script: &str) -> PathBuf {
    let game = dir.join(id);
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let button = |id: &str| json!({"id": id, "components": {"button": {}}});
    let manifest = json!({
        "id": id, "name": id, "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "entities": [button("press"), button("other"), {"id": "count", "components": {"counter": {}}}],
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null}}
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(game.join("scripts/main.lua"), script).expect("main.lua");
    std::fs::write(
        game.join("scripts/helper.lua"),
        "local loads = (storage and 0) or 0\nreturn { made = {} }\n",
    )
    .expect("helper.lua");
    // A module whose body runs until the budget stops it, unless a
    // handler set a limit first.
    std::fs::write(
        game.join("scripts/slow.lua"),
        "for i = 1, (storage.limit or 1e15) do end\nreturn {}\n",
    )
    .expect("slow.lua");
    game
}

fn press(player: &str, id: &str) -> Value {
    json!({"type": "button.press", "source": {"kind": "player", "playerId": player},
           "payload": {"entityId": id}})
}

/// A table with holes whose `#` a handler stores, and `observe`: where
/// `#` lands depends on a hint the table keeps.
macro_rules! length_hint {
    ($observe:literal) => {
        concat!(
            "local t = {1, 2, 3, 4, 5, 6, 7, 8}\n\
             function on_button_pressed(e)\n\
               if e.data.entityId == 'press' then\n\
                 if not storage.cut then t[6], t[7], t[8] = nil, nil, nil storage.cut = true end\n\
               else t[2], t[3], t[4] = nil, nil, nil storage.n = #t end\n\
             end\n",
            $observe
        )
    };
}

/// What each hostile read tries. Each game's handler writes what it can
/// see of the trace into storage (and so into the state hash).
const HOSTILE: &[(&str, &str)] = &[
    (
        "storage-key",
        // A storage table used as a table key: true only if the node the
        // root keeps is the same one (a view used to make and keep it).
        "local KEYS = {}\n\
         function on_button_pressed(e)\n\
           if e.data.entityId == 'press' then\n\
             storage.t = storage.t or {x = 1}\n\
             storage.seen = KEYS[storage.t] == true\n\
             KEYS[storage.t] = true\n\
           end\n\
         end\n\
         function observe(seat) return {x = storage.t and storage.t.x} end\n\
         function public_view() local n = storage.t return {} end\n",
    ),
    (
        "module-table",
        "local seen = {}\n\
         function on_button_pressed(e) storage.n = #seen end\n\
         function observe(seat) seen[#seen + 1] = seat return {} end\n\
         function public_view() seen[#seen + 1] = 'spectator' return {} end\n\
         function participation(seat) seen[#seen + 1] = seat return 'acting' end\n",
    ),
    (
        "upvalue",
        "local count = 0\n\
         function on_button_pressed(e) storage.n = count end\n\
         function current_phase() count = count + 1 return 'play' end\n\
         function safe_default(seat) count = count + 1 return nil end\n\
         function bot(seat, roll) count = count + 1 return nil end\n",
    ),
    (
        "coroutine",
        "local co = coroutine.wrap(function() local i = 0 while true do i = i + 1 coroutine.yield(i) end end)\n\
         function on_button_pressed(e) storage.n = co() end\n\
         function observe(seat) co() return {} end\n\
         function legal_actions(seat) co() return {{type = 'button.press', payload = {entityId = 'press'}}} end\n",
    ),
    (
        "guard-and-dry-run",
        // Guards and handlers run in the dry runs that find legal actions:
        // what they change there must not stay.
        "local tries = {n = 0}\n\
         local function bump() tries.n = tries.n + 1 end\n\
         function can_press(player, button) bump() return true end\n\
         function on_button_pressed(e) bump() storage.n = tries.n end\n",
    ),
    (
        "require",
        // A module first required in a view is not kept.
        "local loaded = 0\n\
         function on_button_pressed(e) local h = require('helper') h.made[#h.made + 1] = 1 storage.n = #h.made end\n\
         function observe(seat) local h = require('helper') return {} end\n",
    ),
    (
        "random-and-reads",
        "function on_button_pressed(e) storage.r = math.random(1000000) end\n\
         function observe(seat)\n\
           local ok = pcall(math.random, 6)\n\
           local list = game.entities()\n\
           local t = {} for i = 1, 1000 do t[i] = tostring(i) .. seat end\n\
           return {n = #list}\n\
         end\n",
    ),
    (
        "coroutine-close",
        // A coroutine made and suspended at load: a read may not close it.
        "local co = coroutine.create(function() coroutine.yield() end)\n\
         coroutine.resume(co)\n\
         function on_button_pressed(e) storage.s = coroutine.status(co) end\n\
         function observe(seat) pcall(coroutine.close, co) return {} end\n",
    ),
    (
        "length-hint",
        // Where `#` lands in a table with holes depends on a hint the
        // table keeps: a read's `#` must not move it.
        length_hint!("function observe(seat) return {n = #t, third = t[3]} end\n"),
    ),
    (
        "length-hint-answer",
        // The same, the read being the host's: a view answers the kept
        // table itself, which the host reads to turn into data.
        length_hint!("function observe(seat) return {list = t} end\n"),
    ),
    (
        "require-stopped",
        // A read stopped by its budget inside a module's body: the module
        // must not stay marked as loading (a handler's require would then
        // fail as a loop).
        "function on_button_pressed(e)\n\
           storage.limit = 10\n\
           local ok, err = pcall(require, 'slow')\n\
           storage.ok = ok and 'yes' or tostring(err)\n\
         end\n\
         function observe(seat) require('slow') return {} end\n",
    ),
    (
        "metatable-and-rawset",
        "local shared = {}\n\
         function on_button_pressed(e) storage.n = getmetatable(shared) and 1 or 0 storage.m = rawget(shared, 'x') or 0 end\n\
         function observe(seat) pcall(setmetatable, shared, {}) pcall(rawset, shared, 'x', 5) return {} end\n",
    ),
];

#[test]
fn hostile_reads_leave_nothing_behind() {
    let dir = scratch("reads-hostile");
    for (id, script) in HOSTILE {
        let game = hostile(&dir, id, script);
        let mut inputs = Vec::new();
        for i in 0..6 {
            let player = if i % 2 == 0 { "p1" } else { "p2" };
            inputs.push(press(player, if i % 3 == 2 { "other" } else { "press" }));
        }
        same_with_and_without_reads(&game, &inputs, 0);
    }
}

/// The CLI's reading outputs (`--view SEAT --observations`) change no
/// record: the record of a run written with them is the record without,
/// byte for byte, and it replays.
#[test]
fn observations_from_the_command_line_change_no_record() {
    let dir = scratch("reads-cli");
    let mut games: Vec<PathBuf> = examples()
        .into_iter()
        .filter(|g| g.join("actions.jsonl").exists())
        .collect();
    for (id, script) in HOSTILE {
        let game = hostile(&dir, id, script);
        let lines: Vec<String> = (0..6)
            .map(|i| press(if i % 2 == 0 { "p1" } else { "p2" }, "press").to_string())
            .collect();
        std::fs::write(game.join("actions.jsonl"), lines.join("\n") + "\n").expect("actions");
        games.push(game);
    }
    for game in games {
        let g = game.display().to_string();
        let actions = game.join("actions.jsonl").display().to_string();
        let plain = dir.join("plain.jsonl").display().to_string();
        let viewed = dir.join("viewed.jsonl").display().to_string();
        let out = run(&["run", &g, "--actions", &actions, "--record", &plain], b"");
        assert!(
            out.status.success(),
            "{g}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seat = Package::load(&game).expect("loads").seats()[0].clone();
        let out = run(
            &[
                "run",
                &g,
                "--actions",
                &actions,
                "--record",
                &viewed,
                "--view",
                &seat,
                "--observations",
                "-",
            ],
            b"",
        );
        assert!(
            out.status.success(),
            "{g}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let a = std::fs::read_to_string(&plain).expect("plain record");
        let b = std::fs::read_to_string(&viewed).expect("viewed record");
        assert_eq!(
            a, b,
            "{g}: the record changed when the run wrote observations"
        );
        let out = run(&["replay", &viewed], b"");
        assert!(
            out.status.success(),
            "{g}: the record does not replay: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
