//! The real terminal: raw mode, the alternate screen and mouse capture,
//! restored when the viewer ends and when it panics, and the event loop
//! that feeds the [`App`].

use std::io::{self, IsTerminal, Write};
use std::sync::Once;
use std::time::Duration;

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use ratatui::DefaultTerminal;

use crate::app::App;

/// The terminal in the viewer's modes; dropping it restores the terminal.
struct Session {
    terminal: DefaultTerminal,
}

static PANIC_HOOK: Once = Once::new();

/// Restores the terminal: mouse capture off, cooked mode, main screen,
/// cursor shown. Safe to call more than once.
fn restore() {
    let mut out = io::stdout();
    let _ = execute!(out, DisableMouseCapture, crossterm::cursor::Show);
    let _ = ratatui::try_restore();
    let _ = out.flush();
}

impl Session {
    fn enter() -> io::Result<Session> {
        if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
            return Err(io::Error::other(
                "the timeline needs an interactive terminal (standard input and output are not both one)",
            ));
        }
        let terminal = ratatui::try_init()?;
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        if let Err(e) = execute!(io::stdout(), EnableMouseCapture) {
            restore();
            return Err(e);
        }
        Ok(Session { terminal })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        restore();
    }
}

/// Draws `app` and feeds it terminal events until it asks to quit; calls
/// `tick` after every batch of events or every `poll` without any.
pub(crate) fn run(
    app: &mut App,
    poll: Duration,
    mut tick: impl FnMut(&mut App) -> io::Result<()>,
) -> io::Result<()> {
    let mut session = Session::enter()?;
    loop {
        app.poll_background();
        let size = session.terminal.size()?;
        if (size.width, size.height) != app.size() {
            app.resize(size.width, size.height);
        }
        session
            .terminal
            .draw(|frame| frame.render_widget(&*app, frame.area()))?;
        if app.should_quit() {
            break;
        }
        if event::poll(poll)? {
            // Handle everything pending before drawing again, so that a fast
            // drag or wheel does not queue up frames.
            loop {
                let ev = event::read()?;
                app.handle_event(&ev);
                if app.should_quit() || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        tick(app)?;
    }
    drop(session);
    Ok(())
}
