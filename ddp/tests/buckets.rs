//! Bucket assignment against layouts PyTorch 2.13 computed
//! (`tests/data/buckets.json`, written by `tests/gen/gen_buckets.py`), plus
//! hand-computed cases and error handling.

use ddp::buckets::{
    compute_bucket_assignment_by_size, initial_bucket_assignment, rebuilt_bucket_assignment,
    should_rebuild_buckets, Bucket, BucketCapConfig, BucketError, DeviceKey, DeviceKeyExt,
    DtypeKey, ParamSpec, ParamSpecExt, DEFAULT_FIRST_BUCKET_BYTES, MIB, UNLIMITED_BUCKET_BYTES,
};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/buckets.json");
    let text = std::fs::read_to_string(path).expect("read buckets.json");
    serde_json::from_str(&text).expect("parse buckets.json")
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| u64_of(x) as usize)
        .collect()
}

fn nested(v: &Value) -> Vec<Vec<usize>> {
    v.as_array().expect("array").iter().map(usizes).collect()
}

fn spec(v: &Value) -> ParamSpec {
    let a = v.as_array().expect("param array");
    ParamSpec {
        numel: u64_of(&a[0]),
        element_size: u64_of(&a[1]),
        dtype: DtypeKey(a[2].as_i64().expect("dtype") as i8),
        device: DeviceKey {
            device_type: a[3].as_i64().expect("device type") as i8,
            index: a[4].as_i64().expect("device index") as i8,
        },
        sparse: a[5].as_bool().expect("sparse"),
    }
}

fn indices(buckets: &[Bucket]) -> Vec<Vec<usize>> {
    buckets.iter().map(|b| b.indices.clone()).collect()
}

#[test]
fn direct_assignments_match_pytorch() {
    let data = fixture();
    assert_eq!(u64_of(&data["sys_maxsize"]), UNLIMITED_BUCKET_BYTES);
    assert_eq!(
        u64_of(&data["default_first_bucket_bytes"]),
        DEFAULT_FIRST_BUCKET_BYTES
    );
    let cases = data["assign"].as_array().expect("assign cases");
    assert!(cases.len() > 90);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let params: Vec<ParamSpec> = case["params"]
            .as_array()
            .expect("params")
            .iter()
            .map(spec)
            .collect();
        let limits: Vec<u64> = case["limits"]
            .as_array()
            .expect("limits")
            .iter()
            .map(u64_of)
            .collect();
        let order = (!case["tensor_indices"].is_null()).then(|| usizes(&case["tensor_indices"]));
        let walked: Vec<ParamSpec> = match &order {
            Some(o) => o.iter().map(|&i| params[i]).collect(),
            None => params.clone(),
        };
        let got = compute_bucket_assignment_by_size(&walked, &limits, order.as_deref())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            indices(&got),
            nested(&case["buckets"]),
            "{name}: bucket indices"
        );
        let got_limits: Vec<u64> = got.iter().map(|b| b.size_limit).collect();
        let want_limits: Vec<u64> = case["bucket_limits"]
            .as_array()
            .expect("limits")
            .iter()
            .map(u64_of)
            .collect();
        assert_eq!(got_limits, want_limits, "{name}: bucket size limits");
    }
}

fn config_of(case: &Value) -> (BucketCapConfig, bool, bool, bool) {
    let c = &case["config"];
    let cap = c["bucket_cap_mb"].as_f64();
    let list: Option<Vec<f64>> = c["bucket_cap_mb_list"]
        .as_array()
        .map(|l| l.iter().map(|x| x.as_f64().expect("cap")).collect());
    let config = BucketCapConfig::new(cap, list.as_deref()).expect("config");
    (
        config,
        c["static_graph"].as_bool().expect("static_graph"),
        c["find_unused_parameters"].as_bool().expect("find_unused"),
        c["set_last_bucket_cap"].as_bool().expect("set_last"),
    )
}

#[test]
fn ddp_initial_and_rebuilt_layouts_match_pytorch() {
    let data = fixture();
    let cases = data["ddp"].as_array().expect("ddp cases");
    assert!(cases.len() > 30);
    let mut rebuilt_cases = 0;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let params: Vec<ParamSpec> = case["params"]
            .as_array()
            .expect("params")
            .iter()
            .map(spec)
            .collect();
        let (config, static_graph, find_unused, set_last) = config_of(case);

        let initial = initial_bucket_assignment(&params, &config, static_graph, find_unused)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            indices(&initial),
            nested(&case["initial"]),
            "{name}: initial layout"
        );

        let after = if should_rebuild_buckets(static_graph, find_unused) {
            rebuilt_cases += 1;
            rebuilt_bucket_assignment(&params, &usizes(&case["ready_order"]), &config, set_last)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        } else {
            initial
        };
        assert_eq!(
            indices(&after),
            nested(&case["after_rebuild"]),
            "{name}: layout after rebuild"
        );
    }
    assert!(rebuilt_cases > 20);
}

fn f32_param(numel: u64) -> ParamSpec {
    ParamSpec::dense(numel, 4, DtypeKey(6), DeviceKey::CPU)
}

#[test]
fn hand_computed_layouts() {
    // 1 KiB, 3 KiB (crosses the first limit and stays), 1 KiB, 8 KiB (larger
    // than the cap: never split), 1 KiB, 1 KiB.
    let params: Vec<ParamSpec> = [256, 768, 256, 2048, 256, 256]
        .into_iter()
        .map(f32_param)
        .collect();
    let buckets = compute_bucket_assignment_by_size(&params, &[2048, 4096], None).unwrap();
    assert_eq!(
        buckets,
        vec![
            Bucket {
                indices: vec![0, 1],
                size_limit: 2048
            },
            Bucket {
                indices: vec![2, 3],
                size_limit: 4096
            },
            Bucket {
                indices: vec![4, 5],
                size_limit: 4096
            },
        ]
    );
    // Rebuild order: indices as given, buckets in production order.
    let order = [5, 4, 3, 2, 1, 0];
    let walked: Vec<ParamSpec> = order.iter().map(|&i| params[i]).collect();
    let buckets = compute_bucket_assignment_by_size(&walked, &[2048, 4096], Some(&order)).unwrap();
    assert_eq!(
        indices(&buckets),
        vec![vec![5, 4], vec![3], vec![2, 1], vec![0]]
    );
    // Two dtypes: independent streams; the float16 bucket holds index 1 and
    // sorts before the float32 bucket that starts at index 2.
    let half = ParamSpec::dense(1024, 2, DtypeKey(5), DeviceKey::CPU);
    let mixed = [f32_param(1024), half, f32_param(1024), half];
    let buckets = compute_bucket_assignment_by_size(&mixed, &[4096, 1 << 20], None).unwrap();
    assert_eq!(indices(&buckets), vec![vec![0], vec![1, 3], vec![2]]);
}

#[test]
fn cap_configuration_follows_torch_2_13() {
    let default = BucketCapConfig::new(None, None).unwrap();
    assert_eq!(default, BucketCapConfig::default());
    assert_eq!(default.bucket_bytes_cap, 25 * MIB);
    assert_eq!(default.first_bucket_bytes_cap, MIB);
    assert!(default.has_small_first_bucket());
    assert_eq!(
        default.initial_limits(false, false),
        vec![UNLIMITED_BUCKET_BYTES]
    );
    assert_eq!(
        default.initial_limits(true, true),
        vec![UNLIMITED_BUCKET_BYTES]
    );
    assert_eq!(default.initial_limits(false, true), vec![MIB, 25 * MIB]);
    assert_eq!(default.rebuild_limits(), vec![MIB, 25 * MIB]);

    // Passing bucket_cap_mb, even the default value, removes the small bucket.
    let explicit = BucketCapConfig::new(Some(25.0), None).unwrap();
    assert_eq!(explicit.first_bucket_bytes_cap, 25 * MIB);
    assert!(!explicit.has_small_first_bucket());
    assert_eq!(explicit.initial_limits(false, true), vec![25 * MIB]);
    assert_eq!(explicit.rebuild_limits(), vec![25 * MIB, 25 * MIB]);

    // int(0.5 * 2**20); a list wins over bucket_cap_mb and is used as is.
    assert_eq!(
        BucketCapConfig::new(Some(0.5), None)
            .unwrap()
            .bucket_bytes_cap,
        524_288
    );
    let listed = BucketCapConfig::new(Some(7.0), Some(&[1.0, 3.0, 2.0])).unwrap();
    assert_eq!(listed.bucket_bytes_cap, 3 * MIB);
    assert_eq!(listed.first_bucket_bytes_cap, 3 * MIB);
    assert_eq!(
        listed.initial_limits(false, false),
        vec![MIB, 3 * MIB, 2 * MIB]
    );
    assert_eq!(listed.rebuild_limits(), vec![MIB, 3 * MIB, 2 * MIB]);
    // An empty list counts as not given.
    assert_eq!(BucketCapConfig::new(None, Some(&[])).unwrap(), default);

    let custom_first = BucketCapConfig::with_first_bucket_bytes(None, None, 30 * MIB).unwrap();
    assert_eq!(custom_first.initial_limits(false, true), vec![25 * MIB]);
}

#[test]
fn bad_input_is_an_error() {
    assert_eq!(
        compute_bucket_assignment_by_size(&[], &[1], None),
        Err(BucketError::NoParameters)
    );
    assert_eq!(
        compute_bucket_assignment_by_size(&[f32_param(1)], &[], None),
        Err(BucketError::NoLimits)
    );
    assert_eq!(
        compute_bucket_assignment_by_size(&[f32_param(1)], &[1], Some(&[0, 1])),
        Err(BucketError::IndicesLengthMismatch {
            params: 1,
            indices: 2
        })
    );
    let huge = ParamSpec::dense(u64::MAX, 2, DtypeKey(6), DeviceKey::CPU);
    assert_eq!(
        compute_bucket_assignment_by_size(&[huge], &[1], None),
        Err(BucketError::SizeOverflow { index: 0 })
    );
    let params = [f32_param(1), f32_param(2), f32_param(3)];
    let config = BucketCapConfig::default();
    for bad in [&[0, 1][..], &[0, 1, 1], &[0, 1, 3]] {
        assert!(matches!(
            rebuilt_bucket_assignment(&params, bad, &config, false),
            Err(BucketError::InvalidReadyOrder { params: 3, .. })
        ));
    }
    let crate_error: ddp::DdpError = BucketError::NoParameters.into();
    assert_eq!(
        crate_error.to_string(),
        "no parameters to assign to buckets"
    );
    for bad in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
        assert!(matches!(
            BucketCapConfig::new(Some(bad), None),
            Err(BucketError::InvalidCapMb { .. })
        ));
        assert!(matches!(
            BucketCapConfig::new(None, Some(&[1.0, bad])),
            Err(BucketError::InvalidCapMb { .. })
        ));
    }
}

#[test]
fn param_specs_from_tensors() {
    let t = tch::Tensor::zeros([3, 5], (tch::Kind::BFloat16, tch::Device::Cpu));
    let s = ParamSpec::of_tensor(&t, 0, false).unwrap();
    assert_eq!(s, ParamSpec::dense(15, 2, DtypeKey(15), DeviceKey::CPU));
    let d = ParamSpec::of_tensor(
        &tch::Tensor::zeros([4], (tch::Kind::Double, tch::Device::Cpu)),
        1,
        true,
    )
    .unwrap();
    assert_eq!(
        (d.numel, d.element_size, d.dtype, d.sparse),
        (4, 8, DtypeKey(7), true)
    );
    assert_eq!(
        DeviceKey::from_device(tch::Device::Cuda(2)),
        DeviceKey::cuda(2)
    );
    assert!(matches!(
        ParamSpec::of_tensor(&tch::Tensor::new(), 9, false),
        Err(BucketError::BadTensor { index: 9, .. })
    ));
}
