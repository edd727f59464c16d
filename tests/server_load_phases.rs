//! The server bench measures what it says (issue 38): each of its phases
//! sends fresh `clientActionId`s, so every measured request is a durable
//! action the server processes and logs — none is answered from the retry
//! cache (which does no durable work). Runs the bench's own clients
//! (`tests/common/load.rs`) against a real server on loopback, bounded by
//! count.

mod common;
#[path = "common/load.rs"]
mod load;
#[path = "common/serving.rs"]
mod serving;
#[path = "common/tally.rs"]
mod tally;

use load::Phase;

fn phase(number: u32, rate: Option<f64>) -> Phase {
    Phase {
        number,
        // Bounded by count alone: no outcome here depends on the clock.
        secs: None,
        per_client_max: 25,
        rate,
    }
}

#[test]
fn every_measured_phase_is_fresh_durable_actions() {
    let dir = common::scratch("load-phases");
    let game = tally::tally_game(&dir);
    let server = serving::Server::start(
        &[game],
        &dir.join("data"),
        &["--rate", "1000000", "--burst", "1000000"],
    );
    let seats = load::seats(&server.addr, 4);
    for (number, rate) in [(1, None), (2, Some(2000.0))] {
        let m = load::run(&server.addr, &seats, &phase(number, rate));
        assert_eq!(
            m.acknowledged,
            4 * 25,
            "phase {number}: every action answered"
        );
        assert_eq!(m.replayed, 0, "phase {number}: none from the retry cache");
        // Each one logged (a match's set-up may be logged as phase 1 begins).
        assert!(
            m.logged >= 100,
            "phase {number}: each one logged, {}",
            m.logged
        );
        assert!(m.commits >= 1, "phase {number}: the log committed");
    }
    // The check catches a phase that reuses ids (as phase 2 once reused
    // phase 1's): those are answered again from the cache, logged never.
    let again = load::run(&server.addr, &seats, &phase(1, None));
    assert_eq!(again.replayed, 100, "a repeated phase is all retries");
    assert_eq!(again.logged, 0, "and logs nothing");
}
