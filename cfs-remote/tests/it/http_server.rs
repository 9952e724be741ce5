//! A static file server on loopback for the HTTP remote's tests: GET of a file under a
//! folder, with `Range: bytes=A-B` answered by 206 unless told to ignore ranges (as some
//! servers do), 404 for anything else. One thread, one request per connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

/// A server running until the test process ends; `url` is its base.
pub struct Server {
    pub url: String,
}

/// Serves `root` on a free loopback port.
pub fn serve(root: &Path, ranges: bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = answer(stream, &root, ranges);
        }
    });
    Server { url }
}

fn answer(stream: TcpStream, root: &Path, ranges: bool) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut range = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.to_ascii_lowercase().strip_prefix("range: bytes=") {
            let (a, b) = value.split_once('-').unwrap();
            range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
        }
    }
    let file: PathBuf = root.join(path.trim_start_matches('/'));
    let body = (!path.contains(".."))
        .then(|| std::fs::read(&file).ok())
        .flatten();
    let mut out = stream;
    match (body, range.filter(|_| ranges)) {
        (None, _) => write!(
            out,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        (Some(body), Some((a, b))) if a < body.len() => {
            let part = &body[a..=b.min(body.len() - 1)];
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {a}-{}/{}\r\nConnection: close\r\n\r\n",
                part.len(),
                a + part.len() - 1,
                body.len()
            )?;
            out.write_all(part)
        }
        (Some(body), _) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            out.write_all(&body)
        }
    }
}
