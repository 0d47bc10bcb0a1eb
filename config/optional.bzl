"""The target_compatible_with value of a target that needs an optional dependency."""

def only_with(setting):
    """Compatible when `setting` (a config_setting label, e.g. "//config:ofi_enabled") holds.

    Otherwise the target is incompatible (//config:not_compiled_in, which no
    platform has), so `bazel test //...` without the switch skips it instead of
    failing to build or run it (config/BUILD).
    """
    return select({
        setting: [],
        "//conditions:default": ["//config:not_compiled_in"],
    })
