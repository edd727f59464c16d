//! A real headless Chromium (Debian's `chromium`, installed by `.ci/run`),
//! driven over the DevTools protocol on a loopback WebSocket: open a page,
//! run JavaScript in it, move the mouse, take screenshots.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// The browser binary: `DIGIPOLOGY_CHROMIUM`, else Debian's.
fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DIGIPOLOGY_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// A browser with one page; the process is killed when dropped.
pub struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    /// Where screenshots go.
    pub shots: PathBuf,
}

impl Browser {
    /// Starts Chromium with an empty profile in `dir` and opens a blank
    /// page `width` × `height` CSS pixels. `None` (with a note on stderr)
    /// when no Chromium is installed and the run does not require one
    /// (`.ci/run` sets `DIGIPOLOGY_BROWSER_TESTS=required`).
    pub fn start(dir: &Path, width: u32, height: u32) -> Option<Browser> {
        let Some(bin) = chromium() else {
            assert!(
                std::env::var("DIGIPOLOGY_BROWSER_TESTS").as_deref() != Ok("required"),
                "no Chromium at /usr/bin/chromium (apt-get install chromium)"
            );
            eprintln!("browser test skipped: no Chromium (apt-get install chromium)");
            return None;
        };
        std::fs::create_dir_all(dir).expect("browser folder");
        let profile = dir.join("profile");
        let _ = std::fs::remove_dir_all(&profile);
        let mut child = Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let stderr = child.stderr.take().expect("chromium stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("chromium said where it listens")
                .expect("chromium stderr");
            if let Some(u) = line.split("DevTools listening on ").nth(1) {
                break u.trim().to_owned();
            }
        };
        // Keep draining stderr so Chromium never blocks on it.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        let (ws, _) = tungstenite::connect(url.as_str()).expect("devtools websocket");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(60)))
                .expect("read timeout");
        }
        let mut b = Browser {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            shots: dir.to_path_buf(),
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.resize(width, height);
        Some(b)
    }

    /// Sends a DevTools command (to the page once attached) and waits for
    /// its answer; events in between are dropped.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("devtools send");
        loop {
            let m = self.ws.read().expect("devtools answer");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).expect("devtools JSON");
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method} failed: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// Sets the page's size in CSS pixels.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
    }

    /// Opens `url` and waits until `ready` (JavaScript) is true on it.
    pub fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for(ready, &format!("the page at {url} to be ready"));
    }

    /// Runs JavaScript on the page (promises awaited) and answers its value.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": js, "awaitPromise": true, "returnByValue": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{js} threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until `js` is truthy on the page: polls every 50 ms, at most
    /// 600 times (the page talks to a live server, so things take a moment).
    pub fn wait_for(&mut self, js: &str, what: &str) -> Value {
        for _ in 0..600 {
            let v = self.eval(&format!(
                "(() => {{ try {{ return {js}; }} catch (e) {{ return null; }} }})()"
            ));
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.screenshot("timeout");
        panic!("waited in vain for {what} ({js})");
    }

    /// The centre of the first element `selector` matches, in CSS pixels.
    pub fn centre(&mut self, selector: &str) -> (f64, f64) {
        let sel = serde_json::to_string(selector).expect("selector");
        let v = self.wait_for(
            &format!("(() => {{ const r = document.querySelector({sel}).getBoundingClientRect(); return r.width > 0 && [r.x + r.width / 2, r.y + r.height / 2]; }})()"),
            &format!("{selector} on the page"),
        );
        (v[0].as_f64().expect("x"), v[1].as_f64().expect("y"))
    }

    fn mouse(&mut self, kind: &str, x: f64, y: f64, buttons: u32) {
        self.mouse_clicks(kind, x, y, buttons, 1);
    }

    /// A mouse event of the `clicks`-th click in a row at (x, y).
    fn mouse_clicks(&mut self, kind: &str, x: f64, y: f64, buttons: u32, clicks: u32) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": clicks, "pointerType": "mouse"}),
        );
    }

    /// A real mouse click on the element's centre.
    pub fn click(&mut self, selector: &str) {
        let (x, y) = self.centre(selector);
        self.mouse("mouseMoved", x, y, 0);
        self.mouse("mousePressed", x, y, 1);
        self.mouse("mouseReleased", x, y, 0);
    }

    /// A real double click at (x, y): two presses, the second with a click
    /// count of two.
    pub fn double_click(&mut self, x: f64, y: f64) {
        self.mouse("mouseMoved", x, y, 0);
        for clicks in 1..=2 {
            self.mouse_clicks("mousePressed", x, y, 1, clicks);
            self.mouse_clicks("mouseReleased", x, y, 0, clicks);
        }
    }

    /// Drags with the mouse from the element's centre to (x, y), in steps.
    pub fn drag(&mut self, selector: &str, to: (f64, f64)) {
        let (x0, y0) = self.centre(selector);
        self.mouse("mouseMoved", x0, y0, 0);
        self.mouse("mousePressed", x0, y0, 1);
        for i in 1..=10 {
            let f = f64::from(i) / 10.0;
            self.mouse("mouseMoved", x0 + (to.0 - x0) * f, y0 + (to.1 - y0) * f, 1);
        }
        self.mouse("mouseReleased", to.0, to.1, 0);
    }

    /// Drags with one finger (touch events) from the element's centre to
    /// (x, y), in steps.
    pub fn touch_drag(&mut self, selector: &str, to: (f64, f64)) {
        let (x0, y0) = self.centre(selector);
        let point = |x: f64, y: f64| json!([{"x": x, "y": y, "id": 1}]);
        self.call(
            "Input.dispatchTouchEvent",
            json!({"type": "touchStart", "touchPoints": point(x0, y0)}),
        );
        for i in 1..=10 {
            let f = f64::from(i) / 10.0;
            let (x, y) = (x0 + (to.0 - x0) * f, y0 + (to.1 - y0) * f);
            self.call(
                "Input.dispatchTouchEvent",
                json!({"type": "touchMove", "touchPoints": point(x, y)}),
            );
        }
        self.call(
            "Input.dispatchTouchEvent",
            json!({"type": "touchEnd", "touchPoints": []}),
        );
    }

    /// Presses and releases a key on whatever has the focus (`Tab`,
    /// `Enter`, or one character).
    pub fn key(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Tab" => ("Tab".to_owned(), 9, String::new()),
            "Enter" => ("Enter".to_owned(), 13, "\r".to_owned()),
            c => (
                format!("Key{}", c.to_uppercase()),
                i64::from(c.to_uppercase().as_bytes()[0]),
                c.to_owned(),
            ),
        };
        let down = json!({"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "text": text});
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        );
    }

    /// Presses Tab until `js` is true of `document.activeElement` (at most
    /// 60 times): the control can be reached from the keyboard.
    pub fn tab_to(&mut self, js: &str) {
        for _ in 0..60 {
            self.key("Tab");
            let on = self.eval(&format!(
                "(() => {{ const a = document.activeElement; return !!a && !!({js}); }})()"
            ));
            if on == json!(true) {
                return;
            }
        }
        panic!("Tab never reached an element where {js}");
    }

    /// Saves a PNG of the page as `NAME.png` in the test's folder.
    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let bytes = base64(shot["data"].as_str().unwrap_or_default());
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, bytes).expect("screenshot written");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (what DevTools sends screenshots as).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).unwrap_or(0));
        }
    }
    out
}
