"""Tests of tools/layering/check_layers.py: the real table is an order, and
the checker fails on each kind of include that goes against it."""

import contextlib
import io
import os
import tempfile
import unittest

from tools.layering import check_layers
from tools.layering.check_layers import LAYERS, Layer


class Tree:
    """A scratch repository: {path: text}, checked with the real table."""

    def __init__(self, files):
        self.directory = tempfile.TemporaryDirectory()
        self.root = self.directory.name
        for path, text in files.items():
            full = os.path.join(self.root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as out:
                out.write(text)
        self.paths = sorted(files)

    def errors(self, layers=LAYERS):
        return check_layers.check(self.root, self.paths, layers)

    def main(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = check_layers.main(["--root", self.root])
        return rc, out.getvalue()


def include(target, angle=False):
    return f"#include <{target}>\n" if angle else f'#include "{target}"\n'


class RealTable(unittest.TestCase):
    def test_the_table_is_an_order(self):
        self.assertEqual(check_layers.check_table(LAYERS), [])

    def test_every_layer_holds_files(self):
        for layer in LAYERS:
            self.assertTrue(layer.paths, layer.name)


class BadIncludes(unittest.TestCase):
    def assert_one_error(self, files, *fragments):
        errors = Tree(files).errors()
        self.assertEqual(len(errors), 1, errors)
        for fragment in fragments:
            self.assertIn(fragment, errors[0])

    def test_the_runtime_may_not_name_a_backend(self):
        self.assert_one_error(
            {"lci/runtime/process_host.cpp": include("lci/runtime/host.hpp") +
                include("backends/ofi/ofi_context.hpp"),
             "lci/runtime/host.hpp": "",
             "backends/ofi/ofi_context.hpp": ""},
            "lci/runtime/process_host.cpp:2:", "layer runtime may not include layer ofi")

    def test_the_runtime_may_not_name_ibv(self):
        self.assert_one_error(
            {"lci/protocol/eager.cpp": include("backends/ibv/ibv_probe.hpp")},
            "layer protocol may not include layer ibv")

    def test_a_backend_may_not_include_the_runtime(self):
        self.assert_one_error(
            {"backends/ofi/ofi_device.cpp": include("backends/backend.hpp") +
                include("lci/runtime/device_impl.hpp")},
            "backends/ofi/ofi_device.cpp:2:", "layer ofi may not include layer runtime")

    def test_the_contract_may_not_include_protocol_code(self):
        self.assert_one_error(
            {"backends/backend.hpp": include("lci/protocol/protocol.hpp")},
            "layer backend_contract may not include layer protocol")

    def test_backends_do_not_see_each_other(self):
        self.assert_one_error(
            {"backends/ibv/ibv_probe.cpp": include("backends/ofi/ofi_probe.hpp")},
            "layer ibv may not include layer ofi")

    def test_the_ibv_backend_may_not_include_its_emulation(self):
        # The emulated verbs device is a test double: only tests link it.
        self.assert_one_error(
            {"backends/ibv/ibv_device.cpp": include("backends/ibv_emu/ibv_emu_fabric.hpp")},
            "layer ibv may not include layer ibv_emu")

    def test_the_ibv_emulation_may_not_include_the_sim_harness(self):
        self.assert_one_error(
            {"backends/ibv_emu/ibv_emu_fabric.cpp": include("sim/sim_harness.hpp")},
            "layer ibv_emu may not include layer sim_harness")

    def test_a_data_structure_may_not_include_the_runtime(self):
        self.assert_one_error(
            {"lci/comp/sync.hpp": include("lci/runtime/runtime_impl.hpp")},
            "layer structures may not include layer runtime")

    def test_the_runtime_may_not_include_progress(self):
        # Device teardown progresses: drain_before_close lives in progress/.
        self.assert_one_error(
            {"lci/runtime/device_impl.cpp": include("lci/progress/progress.hpp")},
            "layer runtime may not include layer progress")

    def test_a_protocol_may_not_include_the_api_entry_points_layer(self):
        self.assert_one_error(
            {"lci/protocol/eager.cpp": include("lci/lci.hpp"), "lci/lci.hpp": ""},
            "layer protocol may not include layer public_api")

    def test_progress_may_not_include_collectives(self):
        self.assert_one_error(
            {"lci/progress/progress.cpp": include("lci/collective/barrier.hpp")},
            "layer progress may not include layer collective")

    def test_the_wire_format_may_not_include_the_runtime(self):
        self.assert_one_error(
            {"lci/wire/control.hpp": include("lci/runtime/request.hpp")},
            "layer wire may not include layer runtime")

    def test_the_sim_network_may_not_include_its_harness(self):
        self.assert_one_error(
            {"sim/sim_device.cpp": include("sim/sim_harness.hpp")},
            "layer sim_network may not include layer sim_harness")

    def test_a_relative_include_is_resolved(self):
        # "lci.hpp" from lci/runtime resolves through the //lci include root.
        self.assert_one_error(
            {"lci/runtime/runtime_impl.cpp": include("lci.hpp"), "lci/lci.hpp": ""},
            "includes lci/lci.hpp: layer runtime may not include layer public_api")

    def test_an_angle_include_of_ours_is_checked(self):
        self.assert_one_error(
            {"lci/util/assert.cpp": include("lci/api/lci_types.hpp", angle=True)},
            "layer util may not include layer api_types")

    def test_an_include_of_a_test_is_in_no_layer(self):
        self.assert_one_error(
            {"lci/matching/table.cpp": include("tests/matching/model.hpp")},
            "includes tests/matching/model.hpp, which is in no layer")

    def test_a_file_in_no_layer_is_an_error(self):
        self.assert_one_error({"lci/newthing/new.cpp": ""}, "lci/newthing/new.cpp:1: is in no layer")

    def test_the_command_fails_on_a_bad_include(self):
        rc, out = Tree({"backends/backend.cpp": include("lci/runtime/runtime_impl.hpp")}).main()
        self.assertEqual(rc, 1)
        self.assertIn("backends/backend.cpp:1:", out)


class GoodIncludes(unittest.TestCase):
    def test_lower_same_and_foreign_includes_pass(self):
        tree = Tree({
            "lci/runtime/device_impl.cpp": include("lci/runtime/device_impl.hpp") +
                include("backends/backend.hpp") + include("backends/linked_backends.hpp") +
                include("lci/util/assert.hpp") + include("lci/api/lci_generated.hpp") +
                include("vector", angle=True) + include("rdma/fabric.h") +
                "// #include \"backends/ofi/ofi_context.hpp\"\n",
            "lci/runtime/device_impl.hpp": "",
            "backends/linked_backends.cpp": include("backends/ofi/ofi_backend.hpp"),
            "backends/ofi/ofi_backend.hpp": include("backends/backend_registry.hpp"),
            "tests/anything.cpp": include("backends/ofi/ofi_device.hpp"),
        })
        self.assertEqual(tree.errors(), [])
        rc, out = tree.main()
        self.assertEqual(rc, 0, out)


class TableErrors(unittest.TestCase):
    def test_a_layer_may_only_name_lower_layers(self):
        layers = [Layer("low", ["a/"], ["high"]), Layer("high", ["b/"], ["low"])]
        self.assertEqual(check_layers.check_table(layers),
                         ["layer low may include high, which is later in the table"])

    def test_unknown_and_repeated_layers(self):
        layers = [Layer("low", ["a/"], ["nothing"]), Layer("low", ["b/"], [])]
        self.assertEqual(check_layers.check_table(layers),
                         ["layer low may include nothing, which is unknown",
                          "layer low is declared twice"])

    def test_the_longest_prefix_wins(self):
        layer = check_layers.layer_of("backends/linked_backends.hpp", LAYERS)
        self.assertEqual(layer.name, "backend_list")
        self.assertEqual(check_layers.layer_of("sim/sim_harness_gtest.hpp", LAYERS).name,
                         "sim_harness")
        # sim/ files outside the network's list are the harness's.
        self.assertEqual(check_layers.layer_of("sim/sim_thread_adopt.cpp", LAYERS).name,
                         "sim_harness")
        self.assertEqual(check_layers.layer_of("sim/sim_world.cpp", LAYERS).name,
                         "sim_network")
        self.assertIsNone(check_layers.layer_of("tests/x.cpp", LAYERS))


if __name__ == "__main__":
    unittest.main()
