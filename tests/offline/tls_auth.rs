//! Connecting to a server that is not etcd: an HTTP/1 server is named as such, not
//! reported as a broken etcd.

use std::time::Duration;

/// Endpoints that are not etcd: an HTTP/1 server behind http:// and behind https:// gets
/// an error that says so and what to check, not a raw h2 or rustls message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http1_server_is_named_not_etcd() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(16) {
            let Ok(mut c) = conn else { continue };
            // One thread per connection, open until the client closes (bounded), so every
            // client reads the answer before any close, as from a real HTTP/1 server.
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    for (scheme, want) in [
        ("http", "not as etcd (gRPC over HTTP/2)"),
        ("https", "does not seem to speak TLS"),
    ] {
        let opts = regscope::source::EtcdOptions {
            endpoints: vec![format!("{scheme}://127.0.0.1:{port}")],
            ..Default::default()
        }
        .with_defaults();
        let err = opts.connect(Duration::from_secs(3)).await.err().unwrap();
        assert!(err.to_string().contains(want), "{scheme}: {err}");
    }
}
