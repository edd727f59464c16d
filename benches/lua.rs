//! Scripted throughput: an action that runs a Lua guard and a Lua handler on
//! every call, and creating a VM with an example game loaded.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use digipology_kernel::{state_from_game, Action, Kernel, Source};
use digipology_lua::{BindingSpec, Limits, LuaHost, Modules, ScriptSpec};
use serde_json::json;

fn spec(source: &str) -> Vec<ScriptSpec> {
    vec![ScriptSpec {
        id: "main".into(),
        file: "scripts/main.lua".into(),
        source: source.into(),
        bindings: vec![BindingSpec {
            id: "global".into(),
            entity: None,
        }],
    }]
}

fn room(source: &str) -> (Kernel, LuaHost) {
    let mut entities: Vec<_> = (0..100)
        .map(|i| json!({"id": format!("e{i:03}"), "components": {"counter": {}}}))
        .collect();
    entities.push(json!({"id": "btn", "components": {"button": {}}}));
    entities.push(json!({"id": "score", "components": {"counter": {}}}));
    let state =
        state_from_game(&json!({"seats": ["a"], "entities": entities}), 1).expect("bench table");
    let mut host = LuaHost::new(&spec(source), Modules::new(), &state, Limits::default())
        .expect("script loads");
    let mut k = Kernel::new(state);
    for line in [
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}"#,
    ] {
        assert!(k.process_line(line, &mut host).accepted());
    }
    (k, host)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lua");
    group.throughput(Throughput::Elements(1));
    let press = Action::new(
        "button.press",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "btn"}),
    );
    let cases = [
        ("button.press with a Lua guard only", "function can_press(p, e) return p.id == 'p1' end"),
        ("button.press with a Lua handler only", "function on_button_pressed(ev) local id = ev.data.entityId end"),
        (
            "button.press with a Lua guard and handler (handler reads the event)",
            "function can_press(p, e) return p.id == 'p1' end\nfunction on_button_pressed(ev) local id = ev.data.entityId end",
        ),
        (
            "button.press with a Lua guard and handler (handler adds to a counter)",
            "function can_press(p, e) return p.id == 'p1' end\nfunction on_button_pressed(ev) game.entity('score'):add(1) end",
        ),
    ];
    for (name, src) in cases {
        let (mut k, mut host) = room(src);
        assert!(k.process(&press, &mut host).accepted());
        group.bench_function(name, |b| b.iter(|| k.process(&press, &mut host)));
    }
    // The same handler accepted and refusing: a handler saying no by raising
    // an error is the documented way; it must not cost much more.
    let refusing = [
        (
            "handler that reads the event, accepted",
            "function on_button_pressed(ev) if ev.data.entityId == 'nope' then error('no') end end",
            true,
        ),
        (
            "handler that reads the event, raising an error (rejected)",
            "function on_button_pressed(ev) if ev.data.entityId == 'btn' then error('no') end end",
            false,
        ),
        (
            "handler doing 10 counter adds",
            "function on_button_pressed(ev) for i = 1, 10 do game.entity('score'):add(1) end end",
            true,
        ),
    ];
    for (name, src, accepted) in refusing {
        let (mut k, mut host) = room(src);
        assert_eq!(k.process(&press, &mut host).accepted(), accepted, "{name}");
        group.bench_function(name, |b| b.iter(|| k.process(&press, &mut host)));
    }
    group.finish();

    let mut group = c.benchmark_group("lua vm");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/high-card");
    let game: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("game.json")).expect("example game"),
    )
    .expect("JSON");
    let source = std::fs::read_to_string(dir.join("scripts/main.lua")).expect("example script");
    let state = state_from_game(&game, 1).expect("example loads");
    group.bench_function("create a VM with examples/high-card loaded", |b| {
        b.iter(|| {
            LuaHost::new(&spec(&source), Modules::new(), &state, Limits::default()).expect("loads")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
