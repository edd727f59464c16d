//! Kernel throughput: counter.add, entity.flip and a rejected action, each at
//! 100 and 100,000 entities. The table is built outside the timed region;
//! each iteration processes one pre-built action against a live kernel
//! (commit included), cycling over 1,024 entities spread across the table so
//! the large table is not served from one hot cache line.

// Throughput figures from counts of a few thousand: exact as doubles.
#![allow(clippy::cast_precision_loss)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use digipology_kernel::{state_from_game, Action, Kernel, NoScripts, Source};
use serde_json::json;

fn table(entities: usize) -> Kernel {
    let list: Vec<_> = (0..entities)
        .map(|i| {
            json!({"id": format!("e{i:06}"), "components": {"counter": {"value": 0}, "flippable": {}}})
        })
        .collect();
    let game = json!({"seats": ["a"], "entities": list});
    let mut k = Kernel::new(state_from_game(&game, 1).expect("bench table loads"));
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, &mut NoScripts).accepted());
    }
    k
}

fn actions(entities: usize, make: impl Fn(&str) -> Action) -> Vec<Action> {
    let step = (entities / 1024).max(1);
    (0..entities.min(1024))
        .map(|i| make(&format!("e{:06}", i * step)))
        .collect()
}

fn p1() -> Source {
    Source::Player {
        player_id: "p1".into(),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("kernel");
    group.throughput(Throughput::Elements(1));
    type Maker = fn(&str) -> Action;
    let cases: [(&str, Maker, bool); 3] = [
        (
            "counter.add",
            |id| Action::new("counter.add", p1(), json!({"entityId": id, "amount": 1})),
            true,
        ),
        (
            "entity.flip",
            |id| Action::new("entity.flip", p1(), json!({"entityId": id})),
            true,
        ),
        (
            "rejected (button.press on a counter)",
            |id| Action::new("button.press", p1(), json!({"entityId": id})),
            false,
        ),
    ];
    for (name, make, accepted) in cases {
        for (label, n) in [("100", 100usize), ("100k", 100_000)] {
            let mut k = table(n);
            let list = actions(n, make);
            assert_eq!(k.process(&list[0], &mut NoScripts).accepted(), accepted);
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(name, format!("{label} entities")), |b| {
                b.iter(|| {
                    i = (i + 1) % list.len();
                    k.process(&list[i], &mut NoScripts)
                });
            });
        }
    }
    let mut k = table(100);
    let line = r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"e000042","amount":1}}"#;
    group.bench_function("counter.add from a JSON line [100 entities]", |b| {
        b.iter(|| k.process_line(line, &mut NoScripts));
    });
    group.finish();
}

/// A placement table: `cards` world cards on a 2-unit grid, `snaps` snap
/// points (radius 1, capacity 1) on a 3-unit grid away from them, ten zones,
/// and the card `mover` the bench drags around.
fn placement_table(cards: usize, snaps: usize) -> Kernel {
    let mut list: Vec<_> = (0..cards)
        .map(|i| {
            let (x, z) = ((i % 100) as f64 * 2.0, (i / 100) as f64 * 2.0);
            json!({"id": format!("card{i:05}"), "components": {
                "transform": {"position": {"x": x, "y": 0, "z": z}}, "grabbable": {}, "stackable": {}}})
        })
        .collect();
    list.extend((0..snaps).map(|j| {
        let (x, z) = (1000.0 + (j % 32) as f64 * 3.0, (j / 32) as f64 * 3.0);
        json!({"id": format!("snap{j:04}"), "components": {
            "transform": {"position": {"x": x, "y": 0, "z": z}}, "snap_point": {"radius": 1, "capacity": 1}}})
    }));
    list.extend((0..10).map(|z| {
        json!({"id": format!("zone{z}"), "components": {
            "transform": {"position": {"x": z as f64 * 150.0, "y": 0, "z": 0}},
            "zone": {"halfExtents": {"x": 40, "y": 1, "z": 40}}}})
    }));
    list.push(json!({"id": "mover", "components": {
        "transform": {"position": {"x": -50, "y": 0, "z": -50}}, "grabbable": {}, "stackable": {}}}));
    let game = json!({"seats": ["a"], "entities": list});
    let mut k = Kernel::new(state_from_game(&game, 1).expect("placement table loads"));
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, &mut NoScripts).accepted());
    }
    k
}

fn drop_at(x: f64, z: f64) -> Action {
    let t = json!({"position": {"x": x, "y": 0, "z": z}, "rotation": {"x": 0, "y": 0, "z": 0, "w": 1},
                   "scale": {"x": 1, "y": 1, "z": 1}});
    Action::new(
        "entity.drop",
        p1(),
        json!({"entityId": "mover", "transform": t}),
    )
}

/// One iteration = grab the mover + drop it at the next target (two actions).
fn placement(c: &mut Criterion) {
    let mut group = c.benchmark_group("placement");
    group.throughput(Throughput::Elements(2));
    let grab = Action::new("entity.grab", p1(), json!({"entityId": "mover"}));
    type Targets = fn(usize) -> Vec<Action>;
    let cases: [(&str, Targets); 3] = [
        ("grab+drop onto a snap point", |snaps| {
            (0..snaps)
                .map(|j| drop_at(1000.0 + (j % 32) as f64 * 3.0 + 0.5, (j / 32) as f64 * 3.0))
                .collect()
        }),
        ("grab+drop into the world", |_| {
            (0..64).map(|i| drop_at(-100.0 - i as f64, 7.0)).collect()
        }),
        ("grab+drop onto a stack and off it", |_| {
            vec![drop_at(2.0, 0.0), drop_at(-60.0, -60.0)]
        }),
    ];
    for (name, targets) in cases {
        for (label, cards, snaps) in [
            ("100 entities, 10 snap points", 90usize, 10usize),
            ("10k entities, 1k snap points", 9_000, 1_000),
        ] {
            let mut k = placement_table(cards, snaps);
            let drops = targets(snaps);
            let mut i = 0usize;
            group.bench_function(BenchmarkId::new(name, label), |b| {
                b.iter(|| {
                    i = (i + 1) % drops.len();
                    let g = k.process(&grab, &mut NoScripts);
                    let d = k.process(&drops[i], &mut NoScripts);
                    debug_assert!(g.accepted() && d.accepted());
                    (g, d)
                });
            });
            assert!(k.state().check_invariants().is_ok());
        }
    }
    group.finish();
}

criterion_group!(benches, bench, placement);
criterion_main!(benches);
