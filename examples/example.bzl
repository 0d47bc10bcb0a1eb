"""lci_example: an example program, as a real process and on the simulator.

    lci_example(name = "hello_world", srcs = ["hello_world.cpp"])

builds two binaries from the same sources (examples/example_main.hpp):
  <name>      links //lci and :process_main: one rank per process, over the
              build's real network (--config=ofi, --config=ibv); no simulator
  <name>_sim  links //lci and :sim_main, which asks for the simulator
              (//sim:sim_program): every rank on the simulated network, in
              one process
The sources are compiled once per binary (each main library defines the
run_threads the example calls).
"""

def lci_example(name, srcs, deps = []):
    """The two binaries of an example; see the module docstring.

    Args:
      name: the real-process binary; "<name>_sim" is the simulated one.
      srcs: the example's sources (they define example::rank_main).
      deps: libraries the example uses besides //lci.
    """
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + [
            "//lci",
            ":process_main",
        ],
    )
    native.cc_binary(
        name = name + "_sim",
        srcs = srcs,
        deps = deps + [
            "//lci",
            ":sim_main",
        ],
    )
