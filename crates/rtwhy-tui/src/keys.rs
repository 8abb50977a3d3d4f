//! Key presses and mouse events to [`Action`]s, apart from drawing. The help overlay
//! lists [`KEYS`] (and [`SESSION_KEYS`] or [`OVERVIEW_KEYS`] where they apply), so what
//! it says and what the keys do cannot drift apart.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use crate::app::{Action, App, Screen};

/// Every key, as the help overlay shows it: keys, what they do.
pub const KEYS: &[(&str, &str)] = &[
    ("Tab / S-Tab", "next / previous pane"),
    (
        "Up Down / k j",
        "move in the pane: spike, lane, line, event",
    ),
    ("PgUp PgDn", "a page up / down"),
    ("Left Right / h l", "cursor one column earlier / later"),
    ("H L / S-Left S-Right", "pan half a view"),
    ("+ / -", "zoom in / out around the cursor"),
    ("wheel", "zoom in / out at the mouse"),
    ("click", "put the cursor there"),
    ("0", "zoom to the whole capture"),
    ("Enter", "show the selected spike's window"),
    ("n / p", "next / previous spike"),
    ("s", "sort spikes by time / latency"),
    ("/", "search a task or event (Enter: go)"),
    ("N", "next match of the search"),
    ("?", "this help (? q Esc close it)"),
    ("q / Esc", "quit (Esc: close help or search)"),
];

/// The keys a capture of a session with an overview adds to [`KEYS`].
pub const SESSION_KEYS: &[(&str, &str)] = &[("o", "back to the session's overview")];

/// Every key of the session's overview, as its help shows them.
pub const OVERVIEW_KEYS: &[(&str, &str)] = &[
    ("Up Down / k j", "select a thread (in the list: a capture)"),
    ("Left Right / h l", "bar cursor one bar lower / higher"),
    (
        "H L / S-Left S-Right",
        "bar cursor an octave lower / higher",
    ),
    ("Enter", "the bar's capture, or its list; in the list: open"),
    ("Tab / S-Tab", "between the bars and the bar's captures"),
    ("PgUp PgDn", "a page up / down"),
    ("o", "the capture on the timeline (o: back here)"),
    ("?", "this help (? q Esc close it)"),
    ("q / Esc", "quit (Esc: close help, leave the list)"),
];

/// What a key press asks for; `searching` while a search is typed.
pub fn action_for(key: KeyEvent, searching: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    if searching {
        return match key.code {
            KeyCode::Enter => Some(Action::SearchSubmit),
            KeyCode::Esc => Some(Action::Cancel),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) => Some(Action::SearchChar(c)),
            _ => None,
        };
    }
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Esc => Action::Cancel,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Tab => Action::NextPane,
        KeyCode::BackTab => Action::PrevPane,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Left if shift => Action::PanLeft,
        KeyCode::Right if shift => Action::PanRight,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::Char('H') => Action::PanLeft,
        KeyCode::Char('L') => Action::PanRight,
        KeyCode::Char('+' | '=') => Action::ZoomIn,
        KeyCode::Char('-' | '_') => Action::ZoomOut,
        KeyCode::Char('0') | KeyCode::Home => Action::ZoomAll,
        KeyCode::Enter => Action::Jump,
        KeyCode::Char('n') => Action::NextSpike,
        KeyCode::Char('p') => Action::PrevSpike,
        KeyCode::Char('s') => Action::ToggleSort,
        KeyCode::Char('/') => Action::SearchStart,
        KeyCode::Char('N') => Action::SearchNext,
        KeyCode::Char('o') => Action::Overview,
        _ => return None,
    })
}

/// Applies a key press.
pub fn on_key(app: &mut App, key: KeyEvent) {
    let searching = app.search.is_some();
    if let Some(a) = action_for(key, searching) {
        // Esc quits only when there is nothing to close.
        let in_list = app.screen == Screen::Overview && app.at.in_list;
        if a == Action::Cancel && !searching && !app.help && !in_list {
            app.apply(Action::Quit);
        } else {
            app.apply(a);
        }
    }
}

/// Applies a mouse event: the wheel zooms at the pointer's time when it is over the
/// timeline (else around the cursor), a click on the timeline moves the cursor.
pub fn on_mouse(app: &mut App, m: MouseEvent) {
    if app.screen == Screen::Overview {
        return;
    }
    let at = app
        .time_at_column(m.column)
        .filter(|_| app.over_timeline(m.row));
    match m.kind {
        MouseEventKind::ScrollUp => app.zoom_at(at.unwrap_or(app.cursor), 0.5),
        MouseEventKind::ScrollDown => app.zoom_at(at.unwrap_or(app.cursor), 2.0),
        MouseEventKind::Down(_) => {
            if let Some(t) = at {
                app.set_cursor(t);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_mean_what_the_help_says() {
        let none = KeyModifiers::NONE;
        assert_eq!(
            action_for(key(KeyCode::Char('q'), none), false),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('+'), none), false),
            Some(Action::ZoomIn)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('-'), none), false),
            Some(Action::ZoomOut)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('l'), none), false),
            Some(Action::Right)
        );
        assert_eq!(
            action_for(key(KeyCode::Left, KeyModifiers::SHIFT), false),
            Some(Action::PanLeft)
        );
        assert_eq!(
            action_for(key(KeyCode::Enter, none), false),
            Some(Action::Jump)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('o'), none), false),
            Some(Action::Overview)
        );
        assert_eq!(action_for(key(KeyCode::Char('x'), none), false), None);
        // While a search is typed, letters are the search.
        assert_eq!(
            action_for(key(KeyCode::Char('q'), none), true),
            Some(Action::SearchChar('q'))
        );
        assert_eq!(
            action_for(key(KeyCode::Enter, none), true),
            Some(Action::SearchSubmit)
        );
        assert_eq!(
            action_for(key(KeyCode::Char('c'), KeyModifiers::CONTROL), true),
            Some(Action::Quit)
        );
        let mut release = key(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        assert_eq!(action_for(release, false), None);
    }
}
