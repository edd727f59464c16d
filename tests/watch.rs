//! `digipology watch` as a designer uses it: edit a script while the room
//! runs, act, see the new behaviour; break the script, see file:line, act,
//! see the previous code still served.

mod common;

use std::io::Write;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::*;

struct Watch {
    child: Child,
    out: Receiver<String>,
    err: Receiver<String>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn press(w: &mut Watch, player: &str) {
    let stdin = w.child.stdin.as_mut().expect("stdin");
    writeln!(stdin, r#"{{"type":"button.press","source":{{"kind":"player","playerId":"{player}"}},"payload":{{"entityId":"deal"}}}}"#)
        .expect("send action");
    stdin.flush().expect("flush");
}

#[test]
fn an_edited_script_is_live_and_a_broken_one_keeps_the_previous_code() {
    let dir = scratch("watch");
    let game = dir.join("high-card");
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    std::fs::copy(
        root().join("examples/high-card/game.json"),
        game.join("game.json"),
    )
    .expect("copy");
    let script = game.join("scripts/main.lua");
    let original = std::fs::read_to_string(root().join("examples/high-card/scripts/main.lua"))
        .expect("script");
    std::fs::write(&script, &original).expect("write");

    let mut child = bin()
        .args(["watch", game.to_str().unwrap_or_default()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch starts");
    let out = lines(child.stdout.take().expect("stdout"));
    let err = lines(child.stderr.take().expect("stderr"));
    let mut w = Watch { child, out, err };
    wait_for(&w.err, "watching");

    // Edit the script: the round message changes.
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&script, original.replace("takes the round", "TAKES IT ALL")).expect("edit");
    let reloaded = wait_for(&w.err, "reloaded scripts");
    eprintln!("{reloaded}");
    press(&mut w, "p1");
    wait_for(&w.out, "TAKES IT ALL");

    // Break it: the error names file and line; the previous code still runs.
    std::fs::write(
        &script,
        original.replace("takes the round", "TAKES IT ALL") + "\nfunction broken(\n",
    )
    .expect("break");
    let failed = wait_for(&w.err, "reload failed");
    assert!(failed.contains("scripts/main.lua:"), "{failed}");
    assert!(failed.contains("syntax error"), "{failed}");
    press(&mut w, "p2");
    wait_for(&w.out, "TAKES IT ALL");
}
