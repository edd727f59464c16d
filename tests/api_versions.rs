//! The creator API is a contract (issue 37; docs/lua-api.md, API
//! versions): a game names the API version it was written for in
//! `game.json` (`apiVersion`, 1 when absent), and the engine keeps each
//! documented behaviour for games of that version.

mod common;

use common::{run, scratch};
use digipology_kernel::observe::Viewer;
use serde_json::{json, Value};

/// Rule: frozen copies of the example games, as they stood before each
/// change of the API (tests/frozen/README.md), pass their scenarios
/// unchanged on today's engine.
#[test]
fn the_examples_of_every_earlier_api_pass_unchanged() {
    let frozen = common::root().join("tests/frozen");
    let mut folders: Vec<_> = std::fs::read_dir(&frozen)
        .expect("tests/frozen")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(folders.len() >= 4, "the frozen copies: {folders:?}");
    for folder in folders {
        let out = run(&["test", &folder.display().to_string()], b"");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(" 0 failed"),
            "{}:\n{text}{}",
            folder.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A room of a two-seat game running `script`, with `api` as its
/// `apiVersion` (none when `None`) and p1 seated in north.
fn room(name: &str, api: Option<Value>, script: &str) -> digipology_room::room::Room {
    let dir = scratch(name);
    let mut game = json!({
        "seats": ["north", "south"],
        "entities": [{"id": "go", "components": {"button": {}}}],
        "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}]
    });
    if let Some(v) = api {
        game["apiVersion"] = v;
    }
    std::fs::write(dir.join("main.lua"), script).expect("write script");
    common::seated_room(&dir, &game, 1, &["p1"])
}

/// What `public_view()` answers in `room`.
fn view(room: &mut digipology_room::room::Room) -> Value {
    room.observation(&Viewer::Spectator)["view"]["view"].clone()
}

/// A script whose view reports how `game.seats()` reads each way a game
/// of either version reads it.
const SEATS: &str = r#"
function public_view()
  local s = game.seats()
  local walked = {}
  for k, v in pairs(s) do walked[#walked + 1] = tostring(k) .. "=" .. tostring(v) end
  local listed = {}
  for i, seat in ipairs(s) do listed[i] = seat.id .. ":" .. tostring(seat.player) end
  return {
    north = s.north, south = s.south,
    count = #s, walked = table.concat(walked, " "), listed = table.concat(listed, " "),
    north_is_p1 = s.north == "p1",
  }
end
"#;

/// Rule (API 1, docs/lua-api.md of 2026-11-30): `game.seats()` is
/// `{seatId = playerId or false}` — `game.seats()[seat] == player` holds,
/// `pairs` walks seat = player; it also answers `ipairs` and `#` as API 2's
/// list does, so a game written against API 2's docs before versions
/// existed keeps working.
#[test]
fn api_1_seats_are_the_map_they_were_documented_as() {
    for api in [None, Some(json!(1))] {
        let mut room = room("api-1-seats", api.clone(), SEATS);
        assert_eq!(
            view(&mut room),
            json!({
                "north": "p1", "south": false, "north_is_p1": true, "count": 2,
                "walked": "north=p1 south=false",
                "listed": "north:p1 south:nil"
            }),
            "apiVersion {api:?}"
        );
    }
}

/// Rule (API 2): `game.seats()` is the list `{ {id, player}, … }` in seat
/// order; reading it by seat id finds nothing.
#[test]
fn api_2_seats_are_a_list_in_seat_order() {
    let mut room = room("api-2-seats", Some(json!(2)), SEATS);
    let v = view(&mut room);
    assert_eq!(v["north_is_p1"], json!(false), "{v}");
    assert_eq!(v["north"], Value::Null, "{v}");
    assert_eq!(v["count"], json!(2), "{v}");
    assert_eq!(v["listed"], json!("north:p1 south:nil"), "{v}");
    let walked = v["walked"].as_str().unwrap_or("");
    assert!(
        walked.starts_with("1=table") && walked.contains(" 2=table"),
        "{v}"
    );
}

/// Rule: `apiVersion` is a whole number from 1 to the newest; anything
/// else is refused at load with the key named, and `check` says so.
#[test]
fn an_unknown_api_version_is_refused_by_name() {
    let dir = scratch("api-float");
    std::fs::write(
        dir.join("game.json"),
        r#"{"apiVersion": 3.0, "seats": ["north"]}"#,
    )
    .expect("write");
    let out = run(&["check", &dir.display().to_string()], b"");
    assert!(out.status.success(), "3.0 is the whole number 3");
    for bad in [json!(0), json!(4), json!("2"), json!(1.5), json!(null)] {
        let dir = scratch("api-bad");
        let game = json!({"apiVersion": bad, "seats": ["north"]});
        std::fs::write(dir.join("game.json"), game.to_string()).expect("write");
        let out = run(&["check", &dir.display().to_string()], b"");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{bad}: {text}");
        assert!(
            text.contains("apiVersion: must be a whole number from 1 to 3"),
            "{bad}: {text}"
        );
        let run_out = run(&["run", &dir.display().to_string()], b"");
        assert!(!run_out.status.success(), "run refuses {bad} too");
        common::assert_no_panic(&run_out);
    }
}

/// Rule: `check` warns about uses of a superseded behaviour it can see —
/// in an API 1 game, each `game.seats()` (its meaning changed in API 2);
/// in an API 2 game, `game.seats()` read by seat id or walked as a map —
/// and about a game that names no version.
#[test]
fn check_warns_about_superseded_uses() {
    let checked = |api: Option<Value>, script: &str| {
        let dir = scratch("api-check");
        let mut game = json!({
            "seats": ["north", "south"],
            "scripts": [{"id": "main", "file": "main.lua", "bindings": [{"id": "global"}]}]
        });
        if let Some(v) = api {
            game["apiVersion"] = v;
        }
        std::fs::write(dir.join("game.json"), game.to_string()).expect("write game");
        std::fs::write(dir.join("main.lua"), script).expect("write script");
        let out = run(&["check", &dir.display().to_string()], b"");
        assert!(out.status.success(), "warnings do not fail check");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let old = "-- seats\nfunction can_act(player, action)\n  return game.seats()[\"north\"] == player.id\nend\n";
    let text = checked(None, old);
    assert!(text.contains("names no apiVersion"), "{text}");
    assert!(
        text.contains("main.lua:3: warning: (apiVersion 1) game.seats() here is API 1's map"),
        "{text}"
    );
    let text = checked(Some(json!(2)), old);
    assert!(!text.contains("names no apiVersion"), "{text}");
    assert!(
        text.contains(
            "main.lua:3: warning: (apiVersion 2) game.seats() is a list in seat order since API 2"
        ),
        "{text}"
    );
    let walked = "function on_start()\n  for seat, p in pairs(game.seats()) do end\nend\n";
    assert!(checked(Some(json!(2)), walked).contains("main.lua:2: warning"));
    let listed = "function on_start()\n  for _, s in ipairs(game.seats()) do end -- game.seats()[s]\n  local first = game.seats()[1]\nend\n";
    let text = checked(Some(json!(2)), listed);
    assert!(!text.contains("warning"), "{text}");
    let peek = "function on_start()\n  game.entity(\"hand\"):peek(\"south\")\nend\n";
    let text = checked(Some(json!(2)), peek);
    assert!(
        text.contains(
            "main.lua:2: warning: (apiVersion 2) a card revealed here shows the seat where it lies"
        ),
        "{text}"
    );
    assert!(!checked(Some(json!(3)), peek).contains("warning"));
}
