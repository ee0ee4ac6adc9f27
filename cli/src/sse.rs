//! A Server-Sent-Events reader (the `text/event-stream` format of the
//! WHATWG HTML standard, the parts a log stream uses): bytes in, events
//! out, whatever the chunking. `data:` lines are joined with `\n`, `event:`
//! names the event (default `message`), a line starting with `:` is a
//! comment (keep-alive), an empty line dispatches.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Feeds on chunks; keeps an unfinished line between them.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl Parser {
    /// The events completed by `chunk`.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        events
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            if self.data.is_empty() && self.event.is_none() {
                return None;
            }
            let event = self.event.take().unwrap_or_else(|| "message".to_owned());
            return Some(Event { event, data: std::mem::take(&mut self.data).join("\n") });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, data: &str) -> Event {
        Event { event: event.to_owned(), data: data.to_owned() }
    }

    #[test]
    fn events_are_read_whatever_the_chunking() {
        let stream = b": keep-alive\n\ndata: line one\n\ndata:line two\r\n\r\nevent: end\ndata:\n\n";
        let whole = Parser::default().feed(stream);
        assert_eq!(whole, [event("message", "line one"), event("message", "line two"), event("end", "")]);
        let mut parser = Parser::default();
        let bytewise: Vec<Event> = stream.iter().flat_map(|b| parser.feed(&[*b])).collect();
        assert_eq!(bytewise, whole);
    }

    #[test]
    fn several_data_lines_make_one_event_and_unknown_fields_are_ignored() {
        let events = Parser::default().feed(b"id: 4\ndata: a\ndata: b\nretry: 10\n\n");
        assert_eq!(events, [event("message", "a\nb")]);
        // An unfinished event is kept until its blank line.
        let mut parser = Parser::default();
        assert!(parser.feed(b"data: x\n").is_empty());
        assert_eq!(parser.feed(b"\n"), [event("message", "x")]);
    }
}
