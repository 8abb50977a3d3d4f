//! trace-cmd `trace.dat` files.
