//! `digipology simulate` (docs/simulate.md): reports on every example with
//! a match contract, the same bytes whatever the number of jobs, an unfair
//! variant caught by its win rates, failed matches saved as records that
//! replay, expectations for CI, and bad flags refused.

#[path = "common/browser.rs"]
mod browser;
mod common;

use std::path::Path;

use common::{bin, example_copy, root, scratch};
use serde_json::Value;

/// Runs `simulate ARGS…` and answers (exit code, stdout, stderr).
fn simulate(args: &[&str]) -> (i32, String, String) {
    let out = bin()
        .arg("simulate")
        .args(args)
        .current_dir(root())
        .output()
        .expect("simulate runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `simulate ARGS…` (no `--out`), which must succeed, and answers
/// the report it prints.
fn printed_report(args: &[&str]) -> Value {
    let (code, stdout, stderr) = simulate(args);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("report")
}

/// A copy of an example whose script `edit` changes; the edit must change
/// something (the rule it bends is where the test expects it).
fn variant(test: &str, example: &str, edit: impl FnOnce(&str) -> String) -> std::path::PathBuf {
    let game = example_copy(test, example);
    let script = game.join("scripts/main.lua");
    let text = std::fs::read_to_string(&script).expect("script");
    let changed = edit(&text);
    assert_ne!(text, changed, "{test}: the edit changed nothing");
    std::fs::write(&script, changed).expect("variant");
    game
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report JSON")
}

/// docs/simulate.md, The report: every example with a match contract is
/// reported — win rates with intervals, lengths, rejections, script
/// errors, expiries — and the report is the same bytes with 1 or 2 jobs.
#[test]
fn every_example_with_a_match_is_reported_the_same_whatever_the_jobs() {
    let base = scratch("simulate-examples");
    for game in ["nim-clock", "rock-paper-scissors", "tic-tac-toe"] {
        let path = format!("examples/{game}");
        let mut texts = Vec::new();
        for jobs in ["1", "2"] {
            let out = base.join(format!("{game}-{jobs}"));
            let (code, stdout, stderr) = simulate(&[
                &path,
                "--matches",
                "60",
                "--seed",
                "7",
                "--jobs",
                jobs,
                "--out",
                out.to_str().expect("path"),
            ]);
            assert_eq!(code, 0, "{game}: {stderr}");
            assert!(stdout.contains("wins"), "{stdout}");
            let mut bytes = std::fs::read(out.join("report.json")).expect("report");
            bytes.extend(std::fs::read(out.join("report.html")).expect("report.html"));
            texts.push(bytes);
        }
        assert_eq!(
            texts[0], texts[1],
            "{game}: report.json or report.html depends on --jobs"
        );
        let r = report(&base.join(format!("{game}-1")));
        assert_eq!(r["matches"], 60);
        assert_eq!(r["statuses"]["match_over"], 60, "{game}: {}", r["statuses"]);
        let seats = r["seats"].as_object().expect("seats");
        assert_eq!(seats.len(), 2);
        let decided: u64 = seats
            .values()
            .map(|s| s["wins"].as_u64().expect("wins"))
            .sum::<u64>()
            + seats
                .values()
                .next()
                .map_or(0, |s| s["draws"].as_u64().expect("draws"));
        assert_eq!(decided, 60, "{game}: every match is one win or one draw");
        for s in seats.values() {
            let (lo, hi) = (
                s["winRate95"][0].as_f64().expect("lo"),
                s["winRate95"][1].as_f64().expect("hi"),
            );
            let rate = s["winRate"].as_f64().expect("rate");
            assert!(lo <= rate && rate <= hi && hi - lo > 0.05, "{game}: {s}");
        }
        assert!(r["length"]["actions"]["median"].as_i64().expect("median") > 0);
        assert!(r["scriptErrors"].as_array().expect("errors").is_empty());
    }
}

/// A variant of rock-paper-scissors where seat a wins every tie: the win
/// rates say so, beyond their 95 % intervals; the fair game's overlap.
#[test]
fn an_unfair_variant_is_caught_by_its_win_rates() {
    let fair = scratch("simulate-fair");
    let (code, _, stderr) = simulate(&[
        "examples/rock-paper-scissors",
        "--matches",
        "1000",
        "--out",
        fair.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let game = variant("simulate-unfair", "rock-paper-scissors", |text| {
        text.replace(
            "  if BEATS[a] == b then",
            "  if BEATS[a] == b or a == b then",
        )
    });
    let out = scratch("simulate-unfair-report");
    let (code, _, stderr) = simulate(&[
        game.to_str().expect("path"),
        "--matches",
        "1000",
        "--out",
        out.to_str().expect("path"),
        "--assert",
        "win-rate:a:0.3:0.7",
    ]);
    assert_eq!(code, 1, "the expectation must fail: {stderr}");
    assert!(stderr.contains("win-rate: seat a won"), "{stderr}");
    let (f, u) = (report(&fair), report(&out));
    let interval = |r: &Value, seat: &str| -> (f64, f64) {
        (
            r["seats"][seat]["winRate95"][0].as_f64().expect("lo"),
            r["seats"][seat]["winRate95"][1].as_f64().expect("hi"),
        )
    };
    let (fa, fb) = (interval(&f, "a"), interval(&f, "b"));
    assert!(
        fa.0 <= fb.1 && fb.0 <= fa.1,
        "the fair game's intervals overlap: {fa:?} {fb:?}"
    );
    let (ua, ub) = (interval(&u, "a"), interval(&u, "b"));
    assert!(ua.0 > ub.1, "a's interval lies above b's: {ua:?} {ub:?}");
}

/// A match that ends in a script error, or never ends, is named in the
/// report and saved as a record that `digipology replay` checks.
#[test]
fn failed_matches_are_saved_as_records_that_replay() {
    // Scissors in round 2 breaks the game; round 3 never ends.
    let game = variant("simulate-broken", "rock-paper-scissors", |text| {
        let broken = text
            .replace(
            "function thrown(answer, event)\n",
            "function thrown(answer, event)\n  if storage.round == 2 and answer == \"scissors\" then error(\"no scissors in round 2\") end\n",
        )
        .replace(
            "function is_terminal()\n  return storage.round ~= nil and storage.round > rounds()\nend",
            "function is_terminal()\n  return false\nend",
        );
        assert_eq!(broken.matches("no scissors").count(), 1);
        assert!(broken.contains("return false"));
        broken
    });
    let out = scratch("simulate-broken-report");
    let (code, _, stderr) = simulate(&[
        game.to_str().expect("path"),
        "--matches",
        "20",
        "--bots",
        "fuzz",
        "--max-actions",
        "60",
        "--out",
        out.to_str().expect("path"),
        "--assert",
        "no-script-errors",
        "--assert",
        "all-finish",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("no-script-errors") && stderr.contains("all-finish"),
        "{stderr}"
    );
    let r = report(&out);
    let errors = r["scriptErrors"].as_array().expect("errors");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("no scissors in round 2"))),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .all(|e| e["at"].as_str().is_some_and(|a| a.starts_with("main:"))),
        "{errors:?}"
    );
    let failed = r["failed"].as_array().expect("failed");
    assert!(!failed.is_empty());
    assert_eq!(
        r["failedSeeds"].as_array().map(Vec::len),
        r["failedCount"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok()),
        "every failed match is named"
    );
    for f in failed {
        let record = out.join(f["record"].as_str().expect("record"));
        let replay = bin()
            .arg("replay")
            .arg(&record)
            .current_dir(root())
            .output()
            .expect("replay");
        assert!(
            replay.status.success(),
            "{}: {}",
            record.display(),
            String::from_utf8_lossy(&replay.stderr)
        );
    }
}

#[test]
fn bad_flags_and_games_without_a_match_are_refused() {
    for (args, says) in [
        (
            vec!["examples/rock-paper-scissors", "--bots", "clever"],
            "unknown bot",
        ),
        (
            vec!["examples/rock-paper-scissors", "--bots", "z=safe"],
            "no seat \"z\"",
        ),
        (
            vec![
                "examples/rock-paper-scissors",
                "--matches",
                "2",
                "--assert",
                "fast",
            ],
            "--assert",
        ),
        (
            vec!["examples/basics", "--matches", "2"],
            "no match contract",
        ),
        (vec!["examples/nowhere"], "nowhere"),
    ] {
        let (code, _, stderr) = simulate(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("internal error"), "{stderr}");
    }
}

/// report.html: one self-contained page (inline SVG, nothing fetched) that
/// a real headless Chromium draws — win-rate bars with their intervals,
/// the length histograms, refusals, script errors (escaped) and the failed
/// matches' records; a screenshot in `target/simulate-report/`.
#[test]
fn the_html_report_draws_in_a_browser() {
    let game = variant("simulate-page", "rock-paper-scissors", |text| {
        text.replace(
            "function thrown(answer, event)\n",
            "function thrown(answer, event)\n  if answer == \"paper\" and storage.round == 3 then error(\"<b>no paper</b> & co\") end\n",
        )
    });
    let out = scratch("simulate-page-report");
    let (code, _, stderr) = simulate(&[
        game.to_str().expect("path"),
        "--matches",
        "40",
        "--bots",
        "a=fuzz",
        "--out",
        out.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        !page.contains("<b>no paper"),
        "a script's message is escaped"
    );
    assert!(page.contains("&lt;b&gt;no paper&lt;/b&gt; &amp; co"));
    assert!(
        !page.contains("http://") && !page.contains("https://") && !page.contains("<script"),
        "self-contained"
    );
    let shots = root().join("target").join("simulate-report");
    let Some(mut b) = browser::Browser::start(&shots, 1000, 1400) else {
        return;
    };
    b.open(
        &format!("file://{}", out.join("report.html").display()),
        "document.querySelectorAll('svg rect.bar').length === 2",
    );
    let hist = b.eval("document.querySelectorAll('svg rect.hist').length");
    assert!(hist.as_u64().unwrap_or(0) >= 10, "{hist}");
    let body = b
        .eval("document.body.innerText")
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        body.contains("<b>no paper</b> & co"),
        "the message reads as written"
    );
    assert!(
        body.contains("records/seed-"),
        "the failed matches' records are named"
    );
    assert!(body.contains("prompt.respond"), "refusals are listed");
    b.screenshot("report");
}

/// docs/simulate.md, Bots: a game's own `bot(seat, roll)` plays its seat
/// (tic-tac-toe's takes wins and blocks: it never loses to random play);
/// a game without one plays `random` for `game`.
#[test]
fn a_games_own_bot_plays_its_seat() {
    let out = scratch("simulate-game-bot");
    let (code, _, stderr) = simulate(&[
        "examples/tic-tac-toe",
        "--matches",
        "100",
        "--bots",
        "x=game",
        "--out",
        out.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r = report(&out);
    assert_eq!(r["bots"]["x"], "game");
    assert_eq!(r["seats"]["o"]["wins"], 0, "{}", r["seats"]);
    assert!(
        r["seats"]["x"]["winRate95"][0].as_f64().expect("lo") > 0.8,
        "{}",
        r["seats"]
    );
    assert_eq!(
        r["rejections"],
        serde_json::json!({}),
        "its moves are legal"
    );
    // Fuzz bots submit whatever they draw: the game's guards refuse the
    // drops off the cells, and the report counts each refusal by type and
    // code.
    let r = printed_report(&[
        "examples/tic-tac-toe",
        "--matches",
        "20",
        "--bots",
        "fuzz",
        "--max-actions",
        "200",
    ]);
    let refused = r["rejections"]["entity.drop"]["guard_denied"]
        .as_u64()
        .unwrap_or(0);
    assert!(refused > 20, "{}", r["rejections"]);
    // Pieces on the board are locked, and the other seat's pieces are not
    // the seat's (match.ownership): no candidate picks up either.
    assert!(
        r["rejections"].get("entity.grab").is_none(),
        "{}",
        r["rejections"]
    );
    let r = printed_report(&[
        "examples/rock-paper-scissors",
        "--matches",
        "20",
        "--bots",
        "game",
    ]);
    assert_eq!(r["statuses"]["match_over"], 20);
}

/// A game whose match functions fail or answer nonsense: the report names
/// them (gameFaults), `no-script-errors` fails, nothing crashes; bad flags
/// are refused before any match is played.
#[test]
fn failing_match_functions_are_reported_and_bad_flags_refused_early() {
    let game = variant("simulate-faults", "tic-tac-toe", |text| {
        text.replace("function score()\n", "function score()\n  error(\"no score today\")\n")
            + "\nfunction legal_actions(seat) return { 1, 2, { type = \"entity.grab\", payload = { entityId = \"x1\" } } } end\n"
    });
    let out = scratch("simulate-faults-report");
    let (code, _, stderr) = simulate(&[
        game.to_str().expect("path"),
        "--matches",
        "5",
        "--max-actions",
        "40",
        "--out",
        out.to_str().expect("path"),
        "--assert",
        "no-script-errors",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("internal error"), "{stderr}");
    assert!(stderr.contains("game faults"), "{stderr}");
    let r = report(&out);
    let faults = r["gameFaults"].as_array().expect("faults");
    assert!(
        faults.iter().any(|f| f["message"]
            .as_str()
            .is_some_and(|m| m.contains("legal_actions listed something"))),
        "{faults:?}"
    );
    // Refused before playing: a file as --out, an assert naming no seat,
    // a negative think time, too many matches.
    let file = scratch("simulate-out-file").join("taken");
    std::fs::write(&file, "x").expect("file");
    let blocked = scratch("simulate-out-blocked");
    std::fs::create_dir_all(blocked.join("report.html")).expect("folder in the way");
    for (args, says) in [
        (
            vec![
                "examples/tic-tac-toe",
                "--out",
                file.to_str().expect("path"),
            ],
            "not a folder",
        ),
        (
            vec!["examples/tic-tac-toe", "--bots", "x=game,x=safe"],
            "named twice",
        ),
        (
            vec!["examples/tic-tac-toe", "--assert", "win-rate:x:0.9:0.1"],
            "band is empty",
        ),
        (
            vec!["examples/tic-tac-toe", "--assert", "win-rate:z:0:1"],
            "no seat \"z\"",
        ),
        (vec!["examples/tic-tac-toe", "--think-ms=-5"], "-5"),
        (
            vec!["examples/tic-tac-toe", "--matches", "2000000"],
            "matches",
        ),
        (vec!["examples/tic-tac-toe", "--matches", "0"], "matches"),
        (
            vec!["examples/tic-tac-toe", "--max-actions", "0"],
            "max-actions",
        ),
        (
            vec![
                "examples/tic-tac-toe",
                "--out",
                blocked.to_str().expect("path"),
            ],
            "report.html: a folder is in the way",
        ),
    ] {
        let (code, _, stderr) = simulate(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("simulate: 1"), "{args:?} played: {stderr}");
    }
    // A seat whose name holds a colon still takes a win-rate band.
    let colon = variant("simulate-colon-seat", "rock-paper-scissors", |t| {
        t.to_owned() + "\n"
    });
    let manifest = colon.join("game.json");
    let text = std::fs::read_to_string(&manifest).expect("game.json");
    std::fs::write(&manifest, text.replace("\"b\"", "\"b:2\"")).expect("game.json");
    let (code, _, stderr) = simulate(&[
        colon.to_str().expect("path"),
        "--matches",
        "4",
        "--assert",
        "win-rate:b:2:0:1",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

/// docs/simulate.md, How a match is played: matches share a room in runs,
/// yet each plays exactly as it does alone — `--seed S+i --matches 1`
/// gives match `i` again (its length in inputs and in virtual time, its
/// status, who won).
#[test]
fn a_match_played_alone_is_the_match_played_among_others() {
    let base = scratch("simulate-alone");
    let all = base.join("all");
    let (code, _, stderr) = simulate(&[
        "examples/rock-paper-scissors",
        "--matches",
        "48",
        "--seed",
        "100",
        "--out",
        all.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r = report(&all);
    assert!(
        r["gameFaults"].as_array().expect("faults").is_empty(),
        "{}",
        r["gameFaults"]
    );
    let longest = r["longest"].as_array().expect("longest");
    assert!(!longest.is_empty());
    for m in longest {
        let seed = m["seed"].as_u64().expect("seed").to_string();
        let alone = base.join(format!("seed-{seed}"));
        let (code, _, stderr) = simulate(&[
            "examples/rock-paper-scissors",
            "--matches",
            "1",
            "--seed",
            &seed,
            "--out",
            alone.to_str().expect("path"),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let one = report(&alone);
        assert_eq!(one["longest"][0], *m, "seed {seed} alone");
    }
}

/// A script that keeps state outside `storage` (here a captured local
/// counting moves, which ends matches early once it is high) plays
/// differently after other matches in the same room: `simulate` notices
/// at the end of a run and reports it as a game fault.
#[test]
fn a_script_keeping_state_between_matches_is_reported() {
    let game = variant("simulate-stale", "tic-tac-toe", |text| {
        text.replace(
            "function on_snap_attached(event)\n",
            "local played = 0\nfunction on_snap_attached(event)\n  played = played + 1\n  if played > 12 then storage.draw = true return end\n",
        )
    });
    let out = scratch("simulate-stale-report");
    let (code, _, stderr) = simulate(&[
        game.to_str().expect("path"),
        "--matches",
        "64",
        "--out",
        out.to_str().expect("path"),
        "--assert",
        "no-script-errors",
    ]);
    assert_eq!(code, 1, "{stderr}");
    let r = report(&out);
    let faults = r["gameFaults"].as_array().expect("faults");
    assert!(
        faults.iter().any(|f| f["message"]
            .as_str()
            .is_some_and(|m| m.contains("keeps state between matches outside storage"))),
        "{faults:?}"
    );
}

/// docs/simulate.md, Failed matches: `--out` names only this run's failed
/// matches — records an earlier run left there are removed first.
#[test]
fn a_rerun_into_the_same_folder_keeps_no_old_records() {
    let out = scratch("simulate-rerun");
    let path = out.to_str().expect("path");
    let failing = [
        "examples/tic-tac-toe",
        "--matches",
        "4",
        "--max-actions",
        "3",
        "--out",
        path,
    ];
    let (code, _, stderr) = simulate(&failing);
    assert_eq!(code, 0, "{stderr}");
    let records = || -> Vec<String> {
        std::fs::read_dir(out.join("records"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        records().len(),
        4,
        "every match stopped unfinished: {:?}",
        records()
    );
    std::fs::write(out.join("records/notes.txt"), "mine").expect("a file of the user's");
    let (code, _, stderr) = simulate(&["examples/tic-tac-toe", "--matches", "4", "--out", path]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report(&out)["failedCount"], 0);
    assert_eq!(records(), vec!["notes.txt".to_owned()]);
}

/// docs/simulate.md, The report: an idle seat's decisions run out
/// (`expiries`) and the room plays its safe default each time
/// (`safeDefaults`, per seat: how many, in how many matches).
#[test]
fn an_idle_seats_expiries_and_safe_defaults_are_counted() {
    let out = scratch("simulate-idle");
    let (code, _, stderr) = simulate(&[
        "examples/rock-paper-scissors",
        "--matches",
        "40",
        "--bots",
        "b=idle",
        "--out",
        out.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r = report(&out);
    assert_eq!(r["statuses"]["match_over"], 40, "{}", r["statuses"]);
    let expired = r["expiries"]["decision_expired"]["b"]
        .as_u64()
        .expect("b's decisions ran out");
    assert!(expired >= 40, "{}", r["expiries"]);
    assert_eq!(
        r["safeDefaults"]["b"]["times"], expired,
        "{}",
        r["safeDefaults"]
    );
    assert_eq!(r["safeDefaults"]["b"]["matches"], 40);
    assert!(r["safeDefaults"].get("a").is_none(), "a plays for itself");
    let page = std::fs::read_to_string(out.join("report.html")).expect("page");
    assert!(page.contains("Safe defaults the room played"));
}

/// A copy of tic-tac-toe with `lua` added at the end of its script.
fn ttt_with(test: &str, lua: &str) -> std::path::PathBuf {
    variant(test, "tic-tac-toe", |t| format!("{t}\n{lua}\n"))
}

/// The report `simulate GAME ARGS…` prints (it must succeed).
fn report_of(game: &Path, args: &[&str]) -> Value {
    let mut all = vec![game.to_str().expect("path")];
    all.extend_from_slice(args);
    printed_report(&all)
}

/// The first game fault's message in report `r` (empty when none).
fn first_fault(r: &Value) -> &str {
    r["gameFaults"][0]["message"].as_str().unwrap_or_default()
}

/// Games a careless creator writes, each reported for what it is
/// (docs/simulate.md, The report): a `legal_actions` that answers no list
/// right before a stall is a game fault and fails `no-script-errors`; an
/// `on_host_event` that fails still counts its expiry; a bot naming a new
/// long action type at every move is counted in a bounded report; an
/// `is_terminal` answering a truthy value ends the match.
#[test]
fn careless_games_are_reported_for_what_they_are() {
    let stalls = ttt_with(
        "simulate-careless-stall",
        "function legal_actions(seat) return \"grab x1\" end",
    );
    let (code, stdout, stderr) = simulate(&[
        stalls.to_str().expect("path"),
        "--matches",
        "4",
        "--assert",
        "no-script-errors",
    ]);
    assert_eq!(code, 1, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("report");
    assert_eq!(r["statuses"]["stalled"], 4, "{}", r["statuses"]);
    assert!(
        first_fault(&r).contains("legal_actions"),
        "{}",
        r["gameFaults"]
    );
    let host = variant("simulate-careless-host", "nim-clock", |t| {
        t.replace(
            "function on_host_event(event)\n",
            "function on_host_event(event)\n  error(\"host boom\")\n",
        )
    });
    let r = report_of(&host, &["--matches", "4", "--bots", "first=idle"]);
    let expired = &r["expiries"]["player_time_exhausted"]["first"];
    assert!(
        expired.as_u64().is_some_and(|n| n >= 4),
        "{}",
        r["expiries"]
    );
    let types = ttt_with(
        "simulate-careless-types",
        "function bot(seat, roll) return { type = roll .. string.rep(\"t\", 2000), payload = {} } end",
    );
    let r = report_of(
        &types,
        &["--matches", "20", "--bots", "game", "--max-actions", "200"],
    );
    let listed = r["rejections"].as_object().expect("rejections");
    assert!(
        listed.len() <= 101,
        "{} rejected types listed",
        listed.len()
    );
    assert!(listed.keys().all(|k| k.chars().count() <= 64));
    assert!(listed.contains_key("(other action types)"), "{listed:?}");
    // A handler failing on every legal move: the stall names why.
    let refused = ttt_with(
        "simulate-careless-refused",
        "function on_entity_grabbed(e) error(\"no grabbing\") end",
    );
    let r = report_of(&refused, &["--matches", "2"]);
    assert_eq!(r["statuses"]["stalled"], 2, "{}", r["statuses"]);
    assert!(
        r["gameFaults"]
            .as_array()
            .is_some_and(|l| l.iter().any(|f| f["message"].as_str().is_some_and(|m| m
                .starts_with("stalled: every candidate action of seat x")
                && m.contains("script_error at main:")))),
        "{}",
        r["gameFaults"]
    );
    // An answer is bounded on the host too, not only in the VM.
    let huge = ttt_with(
        "simulate-careless-huge",
        "function bot(seat, roll) local t = {} for i = 1, 200000 do t[i] = i end return t end",
    );
    let r = report_of(
        &huge,
        &["--matches", "1", "--bots", "game", "--max-actions", "4"],
    );
    assert!(
        first_fault(&r).contains("at most 100000 values"),
        "{}",
        r["gameFaults"]
    );
    let truthy = variant("simulate-careless-truthy", "tic-tac-toe", |t| {
        t.replace(
            "function is_terminal() return storage.winner ~= nil or storage.draw == true end",
            "function is_terminal() return storage.winner or storage.draw end",
        )
    });
    let r = report_of(&truthy, &["--matches", "20"]);
    assert_eq!(r["statuses"]["match_over"], 20, "{}", r["statuses"]);
}
