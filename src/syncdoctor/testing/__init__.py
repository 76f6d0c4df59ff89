"""Testing support for syncdoctor and its users: the network-namespace lab, the fault-injecting workload
and the pytest plugin. These modules do I/O (namespaces, processes)."""
