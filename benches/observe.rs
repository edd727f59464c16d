//! What a seat's view costs (docs/observations.md): projecting one event,
//! the events of an action, and the whole state for a seat, at 200 and
//! 10,000 entities, against the action itself. The table: two private
//! hands of 10 cards, a hidden draw pile holding most of the cards, and a
//! tenth of the cards face down on the table. The action pair puts a card
//! from hand `a` on top of the pile and draws it back (two actions, three
//! events). Figures and the bar are in docs/performance.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use digipology_kernel::{state_from_game, Action, Event, Kernel, NoScripts, Viewer};
use serde_json::json;

fn table(n: usize) -> Kernel {
    let card = |i: usize| format!("c{i:06}");
    let mut entities: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": card(i), "props": {"rank": i % 13}, "components": {
                "flippable": {"flipped": true},
                "transform": {"position": {"x": i % 300, "y": 0, "z": i / 300}}}})
        })
        .collect();
    let on_table = n / 10;
    let hand = |from: usize| (from..from + 10).map(card).collect::<Vec<_>>();
    entities.push(json!({"id": "hand_a", "components": {"container": {"visibility": "private", "owner": "a", "items": hand(on_table)}}}));
    entities.push(json!({"id": "hand_b", "components": {"container": {"visibility": "private", "owner": "b", "items": hand(on_table + 10)}}}));
    let pile: Vec<String> = (on_table + 20..n).map(card).collect();
    entities.push(json!({"id": "pile", "components": {"deck": {}, "container": {"visibility": "hidden", "items": pile}}}));
    let game = json!({"seats": ["a", "b"], "entities": entities});
    let mut k = Kernel::new(state_from_game(&game, 1).expect("bench table loads"));
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"pa"}}"#,
        r#"{"type":"system.seat_assign","source":{"kind":"system"},"payload":{"playerId":"pa","seatId":"a"}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"pb"}}"#,
        r#"{"type":"system.seat_assign","source":{"kind":"system"},"payload":{"playerId":"pb","seatId":"b"}}"#,
    ] {
        assert!(k.process_line(line, &mut NoScripts).accepted());
    }
    k
}

/// Hand `a`'s first card onto the pile, then the pile's top card back.
fn action_pair(k: &Kernel) -> [Action; 2] {
    let first = k
        .state()
        .entity("hand_a")
        .and_then(|e| e.components.container.as_ref())
        .map(|c| c.items[0].to_string())
        .expect("a card in hand a");
    let script = json!({"kind": "script", "scriptId": "main", "bindingId": "global"});
    let pile_len = k
        .state()
        .entity("pile")
        .and_then(|e| e.components.container.as_ref())
        .map_or(0, |c| c.items.len());
    let put = json!({"type": "container.move", "source": script,
                     "payload": {"entity": first, "from": "hand_a", "to": "pile", "index": pile_len}});
    let draw = json!({"type": "deck.draw_to_container", "source": script,
                      "payload": {"deckId": "pile", "target": "hand_a", "count": 1}});
    [put, draw].map(|a| Action::from_json(&a).expect("bench action"))
}

fn observe(c: &mut Criterion) {
    let mut group = c.benchmark_group("observe");
    group.throughput(Throughput::Elements(1));
    let b_seat = Viewer::Seat("b".into());
    for n in [200usize, 10_000] {
        let mut k = table(n);
        let pair = action_pair(&k);
        // The events the pair emits, for projecting on their own.
        let mut events: Vec<Event> = Vec::new();
        for a in &pair {
            let out = k.process(a, &mut NoScripts);
            assert!(out.accepted(), "{:?}", out.rejection());
            events.extend(out.events);
        }
        assert_eq!(events.len(), 2, "container.moved and deck.drawn");
        // The pair leaves the table as it found it: it can run again.
        for a in pair.iter().chain(pair.iter()) {
            assert!(k.process(a, &mut NoScripts).accepted());
        }
        group.bench_function(BenchmarkId::new("the action pair", n), |b| {
            b.iter(|| {
                for a in &pair {
                    k.process(a, &mut NoScripts);
                }
            })
        });
        let mut line = String::new();
        group.bench_function(BenchmarkId::new("its events for seat b", n), |b| {
            b.iter(|| {
                for e in &events {
                    line.clear();
                    k.state().write_event_for(e, &b_seat, &mut line);
                }
            })
        });
        group.bench_function(BenchmarkId::new("its events, referee lines", n), |b| {
            b.iter(|| {
                for e in &events {
                    line.clear();
                    e.write_json_line(&mut line);
                }
            })
        });
        let drawn = &events[1];
        group.bench_function(
            BenchmarkId::new("one event (deck.drawn) for seat b", n),
            |b| {
                b.iter(|| {
                    line.clear();
                    k.state().write_event_for(drawn, &b_seat, &mut line)
                })
            },
        );
        group.bench_function(BenchmarkId::new("the state for seat b (JSON)", n), |b| {
            b.iter(|| k.state().project(&b_seat).to_canonical_json())
        });
        group.bench_function(BenchmarkId::new("the state, referee (JSON)", n), |b| {
            b.iter(|| k.state().canonical_json())
        });
    }
    group.finish();
}

criterion_group!(benches, observe);
criterion_main!(benches);
