//! tracefs control against a fake tree: what rtwhy writes, where, and what it leaves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use rtwhy_record::tracefs::Tracefs;

/// A tracefs-like tree: top-level files, two events, another tool's instance.
fn fake_tree(root: &Path) {
    for d in [
        "instances/other-tool",
        "events/sched/sched_switch",
        "events/sched/sched_waking",
        "events/ftrace/print",
        "options",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("tracing_on"), "1\n").unwrap();
    fs::write(root.join("trace_clock"), "[local] global mono\n").unwrap();
    fs::write(root.join("events/header_page"), "header page text").unwrap();
    fs::write(root.join("events/header_event"), "header event text").unwrap();
    for e in ["sched/sched_switch", "sched/sched_waking", "ftrace/print"] {
        fs::write(
            root.join("events").join(e).join("format"),
            format!("format of {e}"),
        )
        .unwrap();
    }
}

fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.push((p.display().to_string(), Vec::new()));
                stack.push(p);
            } else {
                out.push((p.display().to_string(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_instance_is_configured_inside_itself_and_removed_without_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_tree(root);
    let before = snapshot(root);
    let t = Tracefs::at(root);
    let inst = t.create_instance("rtwhy-4242").unwrap();
    // The kernel populates a new instance; the fake one gets the files it needs.
    fs::create_dir_all(inst.dir().join("options")).unwrap();
    fs::write(inst.dir().join("options/overwrite"), "0").unwrap();
    for e in ["sched/sched_switch", "sched/sched_waking"] {
        fs::create_dir_all(inst.dir().join("events").join(e)).unwrap();
    }
    inst.set_tracing_on(false).unwrap();
    inst.set_buffer_kb(2048).unwrap();
    inst.set_overwrite(true).unwrap();
    assert!(
        !inst.set_option("copy_trace_marker", true).unwrap(),
        "absent option"
    );
    inst.set_clock("mono").unwrap();
    inst.set_cpus(&[1, 2]).unwrap();
    assert!(inst.enable_event("sched", "sched_switch").unwrap());
    assert!(!inst.enable_event("sched", "sched_nonexistent").unwrap());
    inst.marker("rtwhy-fact: a=b").unwrap();
    let read = |f: &str| fs::read_to_string(inst.dir().join(f)).unwrap();
    assert_eq!(read("buffer_size_kb"), "2048");
    assert_eq!(read("options/overwrite"), "1");
    assert_eq!(read("trace_clock"), "mono");
    assert_eq!(read("tracing_cpumask"), "00000006");
    assert_eq!(read("events/sched/sched_switch/enable"), "1");
    assert_eq!(read("tracing_on"), "0");
    assert_eq!(read("trace_marker"), "rtwhy-fact: a=b");
    assert_eq!(t.instances().unwrap(), vec!["other-tool", "rtwhy-4242"]);
    // Nothing outside the instance changed.
    let during: Vec<_> = snapshot(root)
        .into_iter()
        .filter(|(p, _)| !p.contains("rtwhy-4242"))
        .collect();
    assert_eq!(during, before);
    inst.remove().unwrap();
    assert_eq!(snapshot(root), before);
}

#[test]
fn a_dropped_instance_is_removed_and_an_existing_one_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let t = Tracefs::at(dir.path());
    {
        let _i = t.create_instance("rtwhy-1").unwrap();
        assert!(t.create_instance("rtwhy-1").is_err(), "someone's instance");
    }
    assert_eq!(t.instances().unwrap(), vec!["other-tool"]);
}

#[test]
fn stale_instances_are_those_whose_recorder_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tracing");
    let proc = dir.path().join("proc");
    fake_tree(&root);
    let t = Tracefs::at(&root);
    for name in [
        "rtwhy-100",
        "rtwhy-100-watch",
        "rtwhy-200",
        "rtwhy-300",
        "rtwhyish",
    ] {
        fs::create_dir(root.join("instances").join(name)).unwrap();
    }
    // 200 runs rtwhy; 300 is a pid reused by something else; 100 is gone.
    fs::create_dir_all(proc.join("200")).unwrap();
    fs::write(proc.join("200/comm"), "rtwhy\n").unwrap();
    fs::create_dir_all(proc.join("300")).unwrap();
    fs::write(proc.join("300/comm"), "bash\n").unwrap();
    let removed = t.remove_stale(&proc).unwrap();
    assert_eq!(removed, vec!["rtwhy-100", "rtwhy-100-watch", "rtwhy-300"]);
    assert_eq!(
        t.instances().unwrap(),
        vec!["other-tool", "rtwhy-200", "rtwhyish"]
    );
}

#[test]
fn metadata_for_a_trace_comes_from_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let t = Tracefs::at(dir.path());
    assert!(t.has_event("sched", "sched_switch"));
    assert!(!t.has_event("sched", "nope"));
    assert_eq!(t.events_of("sched"), vec!["sched_switch", "sched_waking"]);
    let m = t
        .meta_sources(&[("sched".into(), "sched_waking".into())], None)
        .unwrap();
    assert_eq!(m.header_page, "header page text");
    assert_eq!(m.ftrace_formats, vec!["format of ftrace/print"]);
    assert_eq!(
        m.event_formats,
        vec![(
            "sched".to_string(),
            vec!["format of sched/sched_waking".to_string()]
        )]
    );
    assert!(t
        .meta_sources(&[("sched".into(), "missing".into())], None)
        .is_err());
}
