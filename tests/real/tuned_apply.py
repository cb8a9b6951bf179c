#!/usr/bin/python3
"""Apply a tuned profile with Debian's tuned itself (its Python modules, as
its daemon does in tuned/daemon/application.py and daemon.py), limited to
the block devices a test owns. Used by tests/real/tuned_profile.rs.

    tuned_apply.py PROFILE_DIR PROFILE --devices loop3,loop4 [--hotplug loop5]

PROFILE_DIR holds PROFILE/tuned.conf; /usr/lib/tuned is searched first, as
tuned does, so `include=` finds the shipped profiles. tuned's own code loads
and merges the profiles, sorts the instances by priority, lets each claim
its devices and applies them. Two things are narrowed, so that nothing of
the machine outside the test's devices changes:

- only the units of type disk and sysfs are kept (a shipped profile also
  sets the CPU governor and sysctls); the dropped units are reported;
- the hardware inventory lists only the --devices (pyudev's view of them),
  and hot-plug events are not listened to: --hotplug DEV is handed to the
  disk plugin's own `add` callback after the profile is applied, as a udev
  add event would be.

Prints one JSON object: which instance got which device (initially and
after the hot-plug), and the dropped units. The values stay applied (the
test reads sysfs); the test resets its own devices afterwards.
"""

import argparse
import json
import logging
import sys
import tempfile

from tuned import hardware, monitors, plugins, profiles, storage, units
import tuned.consts as consts
from tuned.utils.global_config import GlobalConfig

KEPT_TYPES = ("disk", "sysfs")


class OnlyTheseDevices(hardware.Inventory):
    """tuned's inventory, listing only the test's block devices and never
    starting the udev monitor thread."""

    def __init__(self, names):
        super().__init__(set_receive_buffer_size=False)
        self._names = set(names)

    def get_devices(self, subsystem):
        return [d for d in super().get_devices(subsystem) if d.sys_name in self._names]

    def start_processing_events(self):
        pass

    def stop_processing_events(self):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile_dir")
    ap.add_argument("profile")
    ap.add_argument("--devices", required=True)
    ap.add_argument("--hotplug", default="")
    a = ap.parse_args()
    logging.getLogger("tuned").setLevel(logging.WARNING)
    devices = [d for d in a.devices.split(",") if d]
    hotplug = [d for d in a.hotplug.split(",") if d]

    config = GlobalConfig()
    inventory = OnlyTheseDevices(devices)
    state = tempfile.NamedTemporaryFile(prefix="tuned-state-", suffix=".pickle")
    storage_factory = storage.Factory(storage.PickleProvider(state.name))
    monitors_repository = monitors.Repository()
    variables = profiles.variables.Variables()
    plugins_repository = plugins.Repository(
        monitors_repository, storage_factory, inventory,
        hardware.DeviceMatcher(), hardware.DeviceMatcherUdev(),
        plugins.instance.Factory(), config, variables)
    priority = int(config.get(consts.CFG_DEFAULT_INSTANCE_PRIORITY,
                              consts.CFG_DEF_DEFAULT_INSTANCE_PRIORITY))
    manager = units.Manager(plugins_repository, monitors_repository, priority,
                            inventory, config)
    locator = profiles.Locator(["/usr/lib/tuned", a.profile_dir])
    loader = profiles.Loader(locator, profiles.Factory(), profiles.Merger(),
                             config, variables)
    profile = loader.load(a.profile)

    dropped = sorted(n for n, u in profile.units.items() if u.type not in KEPT_TYPES)
    kept = {n: u for n, u in profile.units.items() if u.type in KEPT_TYPES}
    manager.create(kept)
    manager.start_tuning()

    def assignment():
        return {
            i.name: sorted(i.assigned_devices | i.processed_devices)
            for i in manager.instances
        }

    result = {"order": [i.name for i in manager.instances], "initial": assignment(),
              "dropped_units": dropped}
    if hotplug:
        disk = next(p for p in manager.plugins if p.name == "disk")
        for name in hotplug:
            inventory._names.add(name)
            disk._hardware_events_callback("add", inventory.get_device("block", name))
        result["after_hotplug"] = assignment()
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
