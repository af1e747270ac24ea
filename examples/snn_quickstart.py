"""The original grilly README's quick-start snippets, run as written (the seed API:
grilly.Compute and grilly.SNNCompute; numpy in, numpy out, on the default device).

    python examples/snn_quickstart.py            # GRILLY_DEVICE=vulkan picks the GPU
"""
import grilly
import numpy as np

# ---- Basic Compute Operations (the seed's snippet, unchanged) ---------------------------------
# Initialize compute backend
backend = grilly.Compute()

# Prepare input data
input_current = np.random.randn(1000).astype(np.float32)
membrane = np.zeros(1000, dtype=np.float32)
refractory = np.zeros(1000, dtype=np.float32)

# Run LIF neuron step (spike generation)
membrane, refractory, spikes = backend.lif_step(
    input_current,
    membrane,
    refractory,
    dt=0.001,           # Timestep in seconds
    tau_mem=20.0,       # Membrane time constant in ms
    v_thresh=1.0        # Spike threshold
)

print(f"Spike count: {np.sum(spikes)}")
print(f"Membrane potential range: [{membrane.min():.3f}, {membrane.max():.3f}]")

# ---- SNN Processing Pipeline (the seed's snippet, unchanged) ----------------------------------
# Initialize SNN with 1000 neurons
snn = grilly.SNNCompute(n_neurons=1000)

# Generate temporal input (timesteps x features)
input_sequence = np.random.randn(10, 1000).astype(np.float32)

# Process sequence through SNN
for timestep in range(input_sequence.shape[0]):
    output_spikes = snn.process(input_sequence[timestep])
    print(f"Timestep {timestep}: {np.sum(output_spikes)} spikes")

# ---- Resource lifecycle (the seed's architecture notes) ---------------------------------------
backend.cleanup()

# With a stronger, steady drive the same neurons fire, then sit out their refractory period
with grilly.Compute() as backend:
    v = np.zeros(4, np.float32)
    r = np.zeros(4, np.float32)
    drive = np.array([0.0, 10.0, 20.0, 40.0], np.float32)
    counts = np.zeros(4)
    for _ in range(100):  # 100 ms
        v, r, s = backend.lif_step(drive, v, r, dt=0.001, tau_mem=20.0, v_thresh=1.0)
        counts += s
    print(f"Spikes in 100 ms for drive {drive.tolist()}: {counts.tolist()}")
