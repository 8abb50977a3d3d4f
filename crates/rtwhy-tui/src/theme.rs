//! Styles and glyphs. Every element has a glyph that reads without colour
//! (`NO_COLOR`); colour only adds to it.

use ratatui::style::{Color, Modifier, Style};

/// Glyph of a task's span after its name.
pub const TASK: char = '=';
/// Glyph of the victim's own running span.
pub const VICTIM: char = '#';
/// Glyph of idle time.
pub const IDLE: char = '.';
/// Glyph of a hard IRQ handler.
pub const IRQ: char = 'I';
/// Glyph of a softirq.
pub const SOFTIRQ: char = 'S';
/// Glyph of a stretch with no events while a task ran.
pub const GAP: char = '?';

/// Colours on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// False under `NO_COLOR`: modifiers (bold, reverse) only.
    pub color: bool,
}

impl Theme {
    /// Colour unless the `NO_COLOR` environment variable is set and not empty
    /// (no-color.org).
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// A pane's border: bold when it has the focus.
    pub fn border(self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            self.fg(Color::DarkGray)
        }
    }

    /// The selected row or the event under the cursor.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Column headers and labels.
    pub fn header(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    /// Secondary text.
    pub fn dim(self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Warnings (dropped events, missing evidence).
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// A task's span; tasks get one of a few colours by thread id.
    pub fn task(self, tid: i32) -> Style {
        const PALETTE: [Color; 5] = [
            Color::Blue,
            Color::Cyan,
            Color::LightBlue,
            Color::LightCyan,
            Color::White,
        ];
        let c = PALETTE
            .get(tid.unsigned_abs() as usize % PALETTE.len())
            .copied()
            .unwrap_or(Color::Blue);
        self.fg(c)
    }

    /// The victim's span and window.
    pub fn victim(self) -> Style {
        self.fg(Color::LightGreen).add_modifier(Modifier::BOLD)
    }

    /// Idle time.
    pub fn idle(self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Hard IRQs.
    pub fn irq(self) -> Style {
        self.fg(Color::LightRed).add_modifier(Modifier::BOLD)
    }

    /// Softirqs.
    pub fn softirq(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// No events while a task ran.
    pub fn gap(self) -> Style {
        self.fg(Color::LightMagenta).add_modifier(Modifier::BOLD)
    }

    /// Timer expiry, wake-up, switch-in and breach markers.
    pub fn marker(self) -> Style {
        self.fg(Color::LightGreen).add_modifier(Modifier::BOLD)
    }

    /// Breakdown bucket `i`'s colour (the bar and the table agree).
    pub fn bucket(self, i: usize) -> Style {
        const PALETTE: [Color; 6] = [
            Color::LightRed,
            Color::Yellow,
            Color::LightBlue,
            Color::LightMagenta,
            Color::LightCyan,
            Color::Gray,
        ];
        self.fg(PALETTE
            .get(i % PALETTE.len())
            .copied()
            .unwrap_or(Color::Gray))
    }
}

/// Breakdown bucket `i`'s glyph (the bar and the table agree).
pub fn bucket_glyph(i: usize) -> char {
    const GLYPHS: [char; 6] = ['#', '=', '+', '~', ':', '-'];
    GLYPHS.get(i % GLYPHS.len()).copied().unwrap_or('-')
}

/// Glyph of a histogram bar's wake-ups under the threshold.
pub const UNDER: char = '█';
/// A bar's wake-ups above the threshold that were never reported as a breach
/// (`ThreadOverview::unreported_above`): [`UNDER`]'s colour, lighter.
pub const UNREPORTED: char = '▒';

/// A tail part's glyph in the overview's bars and legend: `cause` is a cause's key
/// (docs/causes.md), `undiagnosed` or `not_captured`. Causes the timeline draws keep
/// its glyph (`I` hard IRQ, `S` softirq, `?` no events, `=` another task); the others
/// get their initial, and every glyph is different.
pub fn cause_glyph(cause: &str) -> char {
    match cause {
        "irq_on_isolated_cpu" => IRQ,
        "irq" => 'i',
        "softirq" => SOFTIRQ,
        "hwlat" => GAP,
        "preemption" => TASK,
        "rt_throttling" => 'T',
        "frequency_ramp" => 'F',
        "idle_exit" => 'E',
        "priority_inversion" => 'P',
        "lock_contention" => 'L',
        "kernel_nonpreemptible" => 'K',
        "migration" => 'M',
        "unknown" => 'U',
        "undiagnosed" => '!',
        "not_captured" => '~',
        _ => '*',
    }
}

/// A tail part's name as the overview writes it: the cause's key, as the spike list
/// and the diagnosis print it; `not captured` for breaches no capture diagnosed.
pub fn cause_label(cause: &str) -> &str {
    match cause {
        "not_captured" => "not captured",
        c => c,
    }
}

impl Theme {
    /// A histogram bar's wake-ups under the threshold.
    pub fn under(self) -> Style {
        self.fg(Color::Blue)
    }

    /// A tail part in the overview's bars and legend. Causes the timeline draws keep
    /// its colour (hard IRQs, softirqs, no events, tasks); breaches no capture diagnosed
    /// are grey.
    pub fn cause(self, cause: &str) -> Style {
        match cause {
            "irq_on_isolated_cpu" | "irq" => self.irq(),
            "softirq" => self.softirq(),
            "hwlat" => self.gap(),
            "preemption" => self.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            "rt_throttling" => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            "frequency_ramp" => self.fg(Color::LightCyan),
            "idle_exit" => self.fg(Color::Gray),
            "priority_inversion" => self.fg(Color::Magenta).add_modifier(Modifier::BOLD),
            "lock_contention" => self.fg(Color::LightBlue),
            "kernel_nonpreemptible" => self.fg(Color::Green),
            "migration" => self.fg(Color::LightGreen),
            "unknown" | "undiagnosed" => self.fg(Color::White),
            _ => self.fg(Color::DarkGray),
        }
    }

    /// A tail part's cells in a bar: its glyph on its colour, so the bar reads solid.
    pub fn cause_bar(self, cause: &str) -> Style {
        self.cause(cause).add_modifier(Modifier::REVERSED)
    }
}
