//! Results as creators mean them (docs/match.md, Results): a game whose
//! `match.scoring` is `lowestWins` names its lowest scorer the winner in
//! the match result (`run`, observations), on the server's leaderboard
//! and in `simulate`'s report; the same game without it names the
//! highest, with its result written exactly as before. A scoring that is
//! neither is a load error naming `match.scoring`.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::{Path, PathBuf};

use common::{assert_no_panic, run, scratch, write};
use serde_json::{json, Value};
use serving::{get_json, request, Client, Server};

/// Seat `a` scores 3 and `b` 7 (lowest: `a`, highest: `b`) after four
/// presses of `pass`, the seats taking turns from `a`.
const GOLF: &str = r#"
local function turn() return storage.turn or "a" end
function can_press(player, button)
  return game.seat_of(player) == turn(), "not your turn"
end
function on_button_pressed(event)
  storage.passes = (storage.passes or 0) + 1
  storage.turn = turn() == "a" and "b" or "a"
end
function participation(seat)
  if (storage.passes or 0) >= 4 then return "finished" end
  return seat == turn() and "acting" or "waiting"
end
function is_terminal() return (storage.passes or 0) >= 4 end
function score() return { a = 3, b = 7 } end
"#;

/// The golf game as `id` under `dir`, with `match.scoring` set to
/// `scoring` (left out when `None`).
fn golf(dir: &Path, id: &str, scoring: Option<&str>) -> PathBuf {
    let game = serving::two_seat_game(
        dir,
        id,
        vec![json!({"id": "pass", "components": {"button": {}}})],
        GOLF,
    );
    if let Some(s) = scoring {
        common::edit_manifest(&game, |doc| doc["match"]["scoring"] = json!(s));
    }
    game
}

fn press(player: &str, at: i64) -> String {
    format!(
        "{}\n",
        json!({"type": "button.press", "source": {"kind": "player", "playerId": player},
               "payload": {"entityId": "pass"}, "at": at})
    )
}

/// `run`s `game` through its four presses, observing as seat `a`: the
/// result line it prints, and the last observation's `result`.
fn run_to_result(dir: &Path, game: &Path) -> (String, Value) {
    let actions: String = ["p1", "p2", "p1", "p2"]
        .iter()
        .enumerate()
        .map(|(i, p)| press(p, 100 * i64::try_from(i).expect("small")))
        .collect();
    let input = write(dir, "presses.jsonl", actions.as_bytes());
    let obs = dir.join("obs.jsonl");
    let out = run(
        &[
            "run",
            game.to_str().expect("path"),
            "--players",
            "p1,p2",
            "--actions",
            input.to_str().expect("path"),
            "--view",
            "a",
            "--observations",
            obs.to_str().expect("path"),
            "--format",
            "jsonl",
        ],
        b"",
    );
    assert_no_panic(&out);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("digipology: {"))
        .map(|rest| format!("{{{rest}"))
        .unwrap_or_else(|| panic!("no result line: {err}"));
    let last = std::fs::read_to_string(&obs)
        .expect("observations")
        .lines()
        .last()
        .map(|l| serde_json::from_str::<Value>(l).expect("observation"))
        .expect("an observation");
    (line, last["result"].clone())
}

/// docs/match.md, Results: the result names the winners by the declared
/// scoring — the lowest for `lowestWins`, the highest for `highestWins` —
/// in `run`'s result line and in the observations; without `scoring` the
/// result is written exactly as before.
#[test]
fn the_match_result_names_the_winner_by_the_declared_scoring() {
    let dir = scratch("scoring-run");
    let low = golf(&dir, "golf-low", Some("lowestWins"));
    let (line, observed) = run_to_result(&dir, &low);
    let result: Value = serde_json::from_str(&line).expect("result JSON");
    assert_eq!(
        result,
        json!({"status": "match_over", "scores": {"a": 3, "b": 7},
               "scoring": "lowestWins", "winners": ["a"]})
    );
    assert_eq!(observed, result, "the observation's result is the same");

    let high = golf(&dir, "golf-high", Some("highestWins"));
    let (line, observed) = run_to_result(&dir, &high);
    let result: Value = serde_json::from_str(&line).expect("result JSON");
    assert_eq!(result["winners"], json!(["b"]), "{result}");
    assert_eq!(observed["winners"], json!(["b"]), "{observed}");

    // Undeclared: today's result, byte for byte.
    let plain = golf(&dir, "golf-plain", None);
    let (line, observed) = run_to_result(&dir, &plain);
    assert_eq!(line, r#"{"status":"match_over","scores":{"a":3,"b":7}}"#);
    assert_eq!(
        observed,
        json!({"status": "match_over", "scores": {"a": 3, "b": 7}})
    );
}

/// Plays one match of `game` on the server between `ann` and `bob` (each
/// acting seat presses `pass`) and answers (ann's seat, the leaderboard,
/// the finished match's listed result).
fn served_match(server: &Server, game: &str) -> (String, Value, Value) {
    let ann = Client::enqueue(&server.addr, game, "ann");
    let bob = Client::enqueue(&server.addr, game, "bob");
    assert_eq!(ann.match_id, bob.match_id, "one match");
    let ann_seat = ann.seat.clone();
    let mut seats = [ann, bob];
    let pass = json!({"type": "button.press", "payload": {"entityId": "pass"}});
    let mut over = false;
    for _ in 0..20 {
        for c in &mut seats {
            let obs = c.observe(None);
            if obs["result"]["status"] == "match_over" {
                over = true;
            } else if obs["participation"] == "acting" {
                let answer = c.act(&pass);
                assert_eq!(answer["accepted"], true, "{answer}");
            }
        }
        if over {
            break;
        }
    }
    assert!(over, "the match ended");
    let board = get_json(&server.addr, &format!("/games/{game}/leaderboard"));
    let finished = request(
        &server.addr,
        "GET",
        &format!("/games/{game}/matches?status=finished"),
        None,
        None,
    )
    .json();
    (
        ann_seat,
        board["standings"].clone(),
        finished[0]["result"].clone(),
    )
}

/// The leaderboard row of `name`.
fn row<'a>(standings: &'a Value, name: &str) -> &'a Value {
    standings
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no row for {name}: {standings}"))
}

/// docs/server.md, Results: the leaderboard served over HTTP counts the
/// lowest scorer's win in a `lowestWins` game, the highest scorer's in
/// the same game without `scoring`; the listed result names the winner.
/// A match that ends with no scores is a loss for both, not a win.
#[test]
fn the_leaderboard_ranks_by_the_declared_scoring() {
    let dir = scratch("scoring-server");
    let scoreless = golf(&dir, "golf-scoreless", Some("lowestWins"));
    let script = scoreless.join("scripts/main.lua");
    let text = std::fs::read_to_string(&script).expect("script");
    std::fs::write(
        &script,
        text.replace("function score()", "function unused()"),
    )
    .expect("no score()");
    let games = [
        golf(&dir, "golf-low", Some("lowestWins")),
        golf(&dir, "golf-plain", None),
        scoreless,
    ];
    let server = Server::start(&games, &dir.join("d"), &[]);
    let (_, standings, result) = served_match(&server, "golf-scoreless");
    assert_eq!(result["winners"], json!([]), "{result}");
    for name in ["ann", "bob"] {
        let r = row(&standings, name);
        assert_eq!(
            (&r["wins"], &r["draws"], &r["losses"]),
            (&json!(0), &json!(0), &json!(1)),
            "{standings}"
        );
    }
    for (game, winner_seat) in [("golf-low", "a"), ("golf-plain", "b")] {
        let (ann_seat, standings, result) = served_match(&server, game);
        let (winner, loser) = if ann_seat == winner_seat {
            ("ann", "bob")
        } else {
            ("bob", "ann")
        };
        let w = row(&standings, winner);
        assert_eq!(
            (&w["played"], &w["wins"], &w["draws"], &w["losses"]),
            (&json!(1), &json!(1), &json!(0), &json!(0)),
            "{game}: {standings}"
        );
        let l = row(&standings, loser);
        assert_eq!(
            (&l["wins"], &l["losses"]),
            (&json!(0), &json!(1)),
            "{game}: {standings}"
        );
        assert_eq!(standings[0]["name"], winner, "the winner ranks first");
        assert_eq!(result["scores"], json!({"a": 3, "b": 7}), "{result}");
        if game == "golf-low" {
            assert_eq!(result["winners"], json!(["a"]), "{result}");
        } else {
            assert!(result.get("winners").is_none(), "as before: {result}");
        }
    }
}

/// Runs `simulate GAME --matches 12 --jobs J --out OUT` (it must succeed);
/// answers the report's text and what it printed.
fn simulate(game: &Path, out: &Path, jobs: &str) -> (String, String) {
    let o = common::bin()
        .args(["simulate", game.to_str().expect("path"), "--matches", "12"])
        .args(["--jobs", jobs, "--out", out.to_str().expect("path")])
        .current_dir(common::root())
        .output()
        .expect("simulate runs");
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("report.json")).expect("report.json");
    (text, printed)
}

/// docs/simulate.md, The report: `simulate` counts the lowest scorer's
/// wins in a `lowestWins` game and the highest scorer's without it; each
/// seat's score figures are those of its (constant) score; matches all of
/// one length make one-bin histograms, drawn readably; the report is the
/// same bytes with one job or two.
#[test]
fn simulate_counts_wins_by_the_declared_scoring() {
    let dir = scratch("scoring-simulate");
    for (game, scoring, winner, loser) in [
        (
            golf(&dir, "golf-low", Some("lowestWins")),
            "lowestWins",
            "a",
            "b",
        ),
        (golf(&dir, "golf-plain", None), "highestWins", "b", "a"),
    ] {
        let out = dir.join(format!("{scoring}-report"));
        let (text, printed) = simulate(&game, &out, "1");
        let (again, _) = simulate(&game, &dir.join(format!("{scoring}-again")), "2");
        assert_eq!(text, again, "the same bytes whatever the jobs");
        let r: Value = serde_json::from_str(&text).expect("report");
        assert_eq!(r["scoring"], scoring);
        assert_eq!(r["statuses"], json!({"match_over": 12}), "{r}");
        let (w, l) = (&r["seats"][winner], &r["seats"][loser]);
        assert_eq!(
            (&w["wins"], &w["winRate"]),
            (&json!(12), &json!(1.0)),
            "{r}"
        );
        assert_eq!(
            (&l["losses"], &l["winRate"]),
            (&json!(12), &json!(0.0)),
            "{r}"
        );
        assert_eq!(
            r["seats"]["a"]["score"],
            json!({"matches": 12, "mean": 3.0, "sd": 0.0, "min": 3, "max": 3})
        );
        assert_eq!(r["seats"]["b"]["score"]["mean"], json!(7.0));
        // Four presses a match, 100 virtual ms each: one length, one bin.
        for (key, len) in [("actions", 4), ("virtualMs", 400)] {
            assert_eq!(
                r["length"][key]["histogram"],
                json!({"from": len, "binWidth": 1, "counts": [12]}),
                "{key}: {r}"
            );
        }
        let page = std::fs::read_to_string(out.join("report.html")).expect("page");
        assert!(page.contains("every match: 4<"), "one length said once");
        assert_eq!(
            page.matches("class=\"hist\"").count(),
            2,
            "one bar per histogram"
        );
        assert_eq!(
            page.contains("The lowest score wins."),
            scoring == "lowestWins"
        );
        assert!(
            page.contains("<td class=\"num\">3.0</td><td class=\"num\">0.0</td><td>3 – 3</td>"),
            "a's score figures in its row"
        );
        assert!(
            printed.contains(&format!("  {winner}: wins 12 (1.0,")),
            "{printed}"
        );
        assert!(
            printed.contains("  a: wins")
                && printed.contains("score mean 3.0 (sd 0.0, min 3, max 3)"),
            "{printed}"
        );
        assert_eq!(
            printed.contains("(lowest score wins)"),
            scoring == "lowestWins",
            "{printed}"
        );
    }
}

/// docs/match.md, The config: a `scoring` that is neither `highestWins`
/// nor `lowestWins` is refused by `check` (naming `match.scoring` and its
/// line) and when the game loads.
#[test]
fn an_unknown_scoring_is_a_load_error() {
    let dir = scratch("scoring-bad");
    let game = golf(&dir, "golf-bad", Some("lowest"));
    let check = run(&["check", game.to_str().expect("path")], b"");
    assert_no_panic(&check);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(!check.status.success(), "{said}");
    assert!(
        said.contains("match.scoring") && said.contains("lowestWins"),
        "{said}"
    );
    let out = run(
        &["simulate", game.to_str().expect("path"), "--matches", "1"],
        b"",
    );
    assert_no_panic(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("match.scoring"), "{err}");
}
