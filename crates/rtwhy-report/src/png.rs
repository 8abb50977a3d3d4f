//! Test help: an SVG drawn to pixels with resvg, for tests that check where things are
//! drawn. `RTWHY_PNG_DIR=DIR` keeps each picture as a PNG (with text) for a person.

/// The pixels of a drawn picture, RGBA.
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) data: Vec<u8>,
}

impl Picture {
    /// The colour at (`x`, `y`).
    pub(crate) fn pixel(&self, x: f64, y: f64) -> [u8; 3] {
        let i = ((y as u32 * self.width + x as u32) * 4) as usize;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }
}

/// `#rrggbb` as bytes.
pub(crate) fn rgb(hex: &str) -> [u8; 3] {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// `svg` drawn; kept as `RTWHY_PNG_DIR/name` when that is set. Panics when resvg cannot
/// read it: a test's picture must be valid SVG.
pub(crate) fn render_png(svg: &str, name: &str) -> Picture {
    let mut opts = resvg::usvg::Options::default();
    // Text only for a person looking at the picture.
    let keep = std::env::var("RTWHY_PNG_DIR").ok();
    if keep.is_some() {
        opts.fontdb_mut().load_system_fonts();
    }
    let tree = resvg::usvg::Tree::from_str(svg, &opts).expect("resvg parses the SVG");
    let size = tree.size().to_int_size();
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a picture of some size");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    if let Some(dir) = keep {
        let _ = pixmap.save_png(std::path::Path::new(&dir).join(name));
    }
    Picture {
        width: size.width(),
        data: pixmap.data().to_vec(),
    }
}
