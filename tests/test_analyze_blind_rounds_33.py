"""Readings of the hundred-and-twenty-sixth round and after (compiled and sharded-tensor code, fault-tolerant
training, older data-parallel libraries, mixture-of-experts): one behaviour per test, each with the look-alike it must
not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste
from syncdoctor.analyze import analyze_paths, lastlook
from syncdoctor.analyze.model import Category, Kind, Origin
from syncdoctor.analyze.parsers.prefixes import split_prefix

# real: pytorch/torchtitan#1170 (torchft's manager logging what errored in its status line, one line a step)
_ERRORED = "should_commit=False enough_replicas=True, errored='NoneType' object has no attribute 'wait'\n"


def test_a_status_line_whose_errored_field_holds_an_error_is_never_silent(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _ERRORED).hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "errored='NoneType' object has no attribute 'wait'" in top.title


def test_negative_an_empty_errored_field_is_no_error(tmp_path: Path) -> None:
    for paste in ("should_commit=True enough_replicas=True, errored=None\n", "step=3 errored= loss=2.1\n",
                  "step=3 errored='' loss=2.1\n"):
        assert not diagnose_paste(tmp_path, paste).hypotheses, paste


# real: QwenLM/Qwen#698 (vLLM's check, quoted alone) and huggingface/trl#722 (Accelerate's refusal, without its
# exception's name): lines with neither an anchor nor an error word
_BARE_CHECK = ('"The input size is not aligned with the quantized weight shape. This can be caused by too large tensor '
               'parallel size."\n')
_BARE_REFUSAL = ("You can't train a model that has been loaded in 8-bit precision on a different device than the one "
                 "you're training on.\n")


def test_a_paste_of_a_message_without_error_words_is_read_for_the_cause_it_names(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _BARE_CHECK).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title
    top = diagnose_paste(tmp_path, _BARE_REFUSAL).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title


def test_negative_a_healthy_paste_stays_silent_on_the_last_look(tmp_path: Path) -> None:
    paste = ("node1:123:123 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared "
             "object file: No such file or directory : when loading libnccl-net.so\n"
             "node1:123:123 [0] NCCL INFO Using network Socket\n"
             "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
             "|   0  NVIDIA A100-SXM4-80GB  On   | 00000000:07:00.0 Off |                    0 |\n"
             "max locked memory       (kbytes, -l) unlimited\n"
             "Epoch 1: 100%|##########| 100/100 [00:10<00:00,  9.5it/s, loss=0.1]\n")
    assert not diagnose_paste(tmp_path, paste).hypotheses


def test_negative_the_last_look_is_for_pastes_not_for_long_logs(tmp_path: Path) -> None:
    """Past lastlook.MAX_BYTES an input is a log, not a paste: its unanchored lines are not read again."""
    filler = "step 12 loss 2.31 lr 0.0003 tokens/s 51234\n" * (lastlook.MAX_BYTES // 40 + 1)
    assert not diagnose_paste(tmp_path, filler + _BARE_REFUSAL).hypotheses
    assert diagnose_paste(tmp_path, filler[:4000] + _BARE_REFUSAL).hypotheses


def test_known_causes_reads_each_line_with_its_place() -> None:
    events = lastlook.known_causes("epoch 1\n" + _BARE_REFUSAL, "paste.txt", Origin(rank=3))
    assert [(e.kind, e.ref.line, e.origin.rank) for e in events] == [(Kind.ERROR_LINE, 2, 3)]
    assert lastlook.known_causes("epoch 1\nloss 2.0\n", "paste.txt", Origin()) == []


# real: NVIDIA/nvshmem#40 (the kernel's log beside NVLS multicast mapping failing with CUDA error 401)
_FABRIC = ("[1891044.581319] NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out "
           "of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from status @ mem_multicast_fabric.c:2917\n")


def test_the_drivers_nvlink_fabric_out_of_sync_is_the_gpus_fabric(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _FABRIC).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "fabric" in top.title


def test_negative_nvidia_smis_ecc_column_header_is_no_gpu_fault(tmp_path: Path) -> None:
    paste = "ERROR: job failed | GPU  Name | Volatile Uncorr. ECC |\n"
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is not Category.GPU_ERROR


# real: NVIDIA/nccl#1913 (aws-ofi-nccl on two nodes that group their EFA NICs differently; the warnings pasted apart
# from nccl-tests' failure)
_RAILS = ("NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2\n"
          "NET/OFI Unexpected number of remote rails for dev 1. Expected 2 but got 3\n")
_SYSTEM = ("worker-0:19817:19817 [0] NCCL INFO include/socket.h:403 -> 2\n"
           "worker-0:19817:19817 [0] NCCL INFO transport/net.cc:476 -> 2\n"
           "Test NCCL failure all_reduce.cu:471 'internal error - please report this issue to the NCCL developers'\n")


def test_nics_grouped_into_other_rails_on_the_peer_is_the_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _RAILS).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "rails per device" in top.title


def test_a_system_error_at_init_takes_the_cause_a_warning_pasted_apart_names(tmp_path: Path) -> None:
    (tmp_path / "error.txt").write_text(_SYSTEM)
    (tmp_path / "rails.txt").write_text(_RAILS)
    top = analyze_paths([str(tmp_path / "error.txt"), str(tmp_path / "rails.txt")]).diagnosis.hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "a warning of the inputs says nodes that group their NICs" in top.title


def test_negative_a_system_error_at_init_alone_is_still_a_connection_lead(tmp_path: Path) -> None:
    (tmp_path / "error.txt").write_text(_SYSTEM)
    (tmp_path / "other.txt").write_text("epoch 3 loss 2.1\n")
    top = analyze_paths([str(tmp_path / "error.txt"), str(tmp_path / "other.txt")]).diagnosis.hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.confidence < 0.5


# real: the Neuron runtime on a Ray DDP job whose ranks compiled different graphs (aws-neuron-sdk, held case r11y)
_NEFF = ("2023-Oct-27 14:18:42.0222 35560:35755 ERROR   ENC:validate_neff_cc_ops                    [nec_dev 0] "
         "mismatching number of cc ops, expected 6 received 3. Check if ranks 1 and 0 are using the same neff\n")


def test_ranks_that_loaded_graphs_with_other_collectives_disagree(tmp_path: Path) -> None:
    assert diagnose_paste(tmp_path, _NEFF).hypotheses[0].category is Category.COLLECTIVE_DESYNC
    paste = _NEFF.replace("mismatching number of cc ops, expected 6 received 3", "loaded 6 cc ops")
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is not Category.COLLECTIVE_DESYNC


# real: deepmodeling/dpgen#1753 (a PyTorch-only install importing the TensorFlow backend, under mpirun) and
# meta-pytorch/torchrec#224 (an FBGEMM build without the operator; TorchX's prefix before each line)
_NO_MODULE = "ModuleNotFoundError: No module named 'tensorflow'\n"
_NO_OPERATOR = ("dlrm_main/0 [1]:RuntimeError: No such operator fbgemm::permute_pooled_embs_auto_grad\n"
                "dlrm_main/0 ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 "
                "(pid: 2877) of binary: /home/neo/anaconda3/bin/python\n")


def test_a_module_or_operator_the_environment_lacks_is_the_setup(tmp_path: Path) -> None:
    for paste in (_NO_MODULE, _NO_OPERATOR):
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "the installed environment lacks" in top.title, top.title


def test_negative_a_missing_key_or_attribute_is_the_programs_own_failure(tmp_path: Path) -> None:
    for paste in ("KeyError: 'labels'\n", "AttributeError: 'NoneType' object has no attribute 'module'\n"):
        assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED, paste


def test_torchxs_prefix_names_the_replica_and_the_local_rank() -> None:
    prefix = split_prefix("dlrm_main/0 [1]:RuntimeError: No such operator fbgemm::x")
    assert (prefix.origin.host, prefix.origin.local_rank, prefix.body) == ("dlrm_main/0", 1, "RuntimeError: No such "
                                                                           "operator fbgemm::x")
    assert split_prefix("trainer/3 ERROR:torch.distributed.elastic.multiprocessing.api:failed").origin.host == "trainer/3"
    # (a path or a ratio is no prefix)
    assert split_prefix("epoch/1 loss 2.0").origin.host is None
    assert split_prefix("usr/2 [3]").origin.host is None


# real: EleutherAI/lm-evaluation-harness#3190 and #2647 (settings refused as such)
_REFUSED = ("ValueError: DeepSpeed Zero-3 is not compatible with passing a `device_map`.\n",
            "ValueError: You selected an invalid strategy name: `strategy=<NLPDDPStrategy object at 0x7f>`.\n")


def test_settings_refused_in_the_librarys_words_are_the_configuration(tmp_path: Path) -> None:
    for paste in _REFUSED:
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title, paste


def test_negative_a_value_the_program_computed_wrong_is_its_own_failure(tmp_path: Path) -> None:
    # (lmms-eval#438's empty device map, re-judged a bug of the program, A003)
    for paste in ("ValueError: Expected input batch_size (16) to match target batch_size (8).\n",
                  "RuntimeError: Device string must not be empty\n"):
        assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED, paste


# real: PrimeIntellect-ai/prime-rl#3020 (its orchestrator's record of the trainer's exit, the trainer's own error unseen)
def test_a_supervisors_record_of_a_worker_that_exited_with_a_code_is_its_crash(tmp_path: Path) -> None:
    paste = "  ERROR Error: Trainer failed with exit code 1\n"
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED


def test_negative_a_container_or_hook_that_failed_to_start_is_no_workers_crash(tmp_path: Path) -> None:
    for paste in ("slurmstepd: error: pyxis: container start failed with error code: 1\n",
                  "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n"):
        assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.UNRECOGNISED, paste


# real: b4rtaz/distributed-llama#26 (three nodes; its nodes are slices of every layer: two to the power of n only)
def test_a_c_assertion_on_the_jobs_shape_is_the_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, "dllama: src/nn/nn-core.cpp:98: Assertion `d % nSlices == 0' failed.\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title


def test_negative_a_c_assertion_on_the_programs_state_is_its_crash(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, "python: foo.c:12: main: Assertion `ptr != NULL' failed.\n").hypotheses[0]
    assert top.category is Category.RANK_CRASHED


# real: ml-explore/mlx#3467 (JACCL over Thunderbolt 5 RDMA, a GID of fe80:: only)
def test_a_queue_pair_refused_on_its_way_to_rtr_is_the_qp_setup(tmp_path: Path) -> None:
    paste = "[jaccl] Changing queue pair to RTR failed with errno 22\n"
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.IB_MODIFY_QP


# real: huggingface/accelerate#3442 (MiCS with parameters built under zero.Init)
def test_a_mode_that_needs_its_own_setup_in_the_librarys_words_is_the_configuration(tmp_path: Path) -> None:
    paste = ("AssertionError: Sharded parameters don't have the MiCS_CommGroups attached. Might due to the use of "
             "deepspeed.zero.Init context for initializing the weights. To use MiCS sharding, please use "
             "deepspeed.zero.MiCS_Init instead for initializing parameter.\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title


# real: pytorch/pytorch#126032 (a test's failure under pytest) and #73885 (TensorPipe's ibv transport on EFA)
def test_pytests_marker_is_taken_off_the_exceptions_lines(tmp_path: Path) -> None:
    prefix = split_prefix("E           RuntimeError: Inplace update to inference tensor outside InferenceMode")
    assert prefix.body.startswith("RuntimeError: Inplace update")
    assert split_prefix("E0312 10:11:12.123456    1054 f.cc:200] x").body != "0312 10:11:12.123456    1054 f.cc:200] x"
    top = diagnose_paste(tmp_path, "E       RuntimeError: In operator() at tensorpipe/common/ibv.h:172 \"\": Operation "
                                   "not supported\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "TensorPipe's InfiniBand transport" in top.title


# real: pytorch/pytorch#159200 (a device-qualified backend string, ``cuda:nccl``, split into a 2-D mesh)
def test_a_backend_torch_does_not_know_by_that_name_is_the_configuration(tmp_path: Path) -> None:
    for paste in ("[rank0]: AssertionError: Unknown c10d backend type CUDA:NCCL\n", "ValueError: Invalid backend: 'ncll'\n"):
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title, paste


def test_negative_a_backend_that_failed_as_it_ran_is_not_its_name(tmp_path: Path) -> None:
    paste = "RuntimeError: Backend nccl failed to initialize the communicator: unhandled system error\n"
    assert "configuration the program refused" not in diagnose_paste(tmp_path, paste).hypotheses[0].title
